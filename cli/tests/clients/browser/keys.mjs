// Measures what the browser viewer allocates per key press in headless
// Chromium (not a test: figures for a change's description). Run by hand:
//   node keys.mjs TRACETREE TRACE [PRESSES]
// with TRACE from `tracetree gen` (calls to expand). The page walks the
// first thread's tree as speed.mjs does (down, expanding each call, one in
// four collapsed again) for PRESSES key presses, in batches of 50. Around
// each batch it reads the bytes of the objects in the renderer's DOM heap
// (Blink's garbage-collected heap, garbage included until collected) from
// a memory dump that does not collect. Prints, as JSON: the heap's growth
// per key press over the batches in which it was not collected (each
// batch's growth listed: a drop is a collection), what the measuring
// itself allocates per round (reading the page without a key), and per key
// press the layouts, style recalculations and their milliseconds and the
// script's; the renderer's resident memory at the start and end.

import { loadavg } from 'node:os';
import { launch, memoryOf, newPage, rendererOf, serve, settled as settledOf } from './measure.mjs';

const [binary, trace, presses = '1000'] = process.argv.slice(2);
const BATCH = 50;
const { server, url } = await serve(binary, [trace]);
const { browser, browserSession } = await launch();

/** The bytes of objects in `pid`'s Blink heap, from a memory dump that
 * does not collect first. */
async function domHeapOf(pid) {
  const events = [];
  const collected = new Promise((resolve) => browserSession.once('Tracing.tracingComplete', resolve));
  const listener = (data) => events.push(...data.value);
  browserSession.on('Tracing.dataCollected', listener);
  await browserSession.send('Tracing.start', {
    traceConfig: { includedCategories: ['disabled-by-default-memory-infra'], memoryDumpConfig: { triggers: [] } },
    transferMode: 'ReportEvents',
  });
  await browserSession.send('Tracing.requestMemoryDump', { deterministic: false, levelOfDetail: 'detailed' });
  await browserSession.send('Tracing.end');
  await collected;
  browserSession.off('Tracing.dataCollected', listener);
  let bytes = 0;
  for (const event of events) {
    const allocators = event.pid === pid && event.args?.dumps?.allocators;
    if (!allocators) continue;
    // The objects allocated in the heap, garbage included until collected.
    const size = allocators['blink_gc/main/allocated_objects']?.attrs?.size;
    if (size) bytes += parseInt(size.value, 16);
  }
  return bytes;
}

try {
  const page = await newPage(browser);
  const settled = () => settledOf(page);
  await page.goto(url);
  await settled();
  const session = await page.context().newCDPSession(page);
  await session.send('Performance.enable');
  const metrics = async () => Object.fromEntries((await session.send('Performance.getMetrics')).metrics
    .map(({ name, value }) => [name, value]));
  const renderer = await rendererOf(browserSession, page);
  await page.focus('#tree');
  await page.keyboard.press('Enter');
  await settled();
  let pressed = 0;
  let expanded = 0;
  const press = async (key) => {
    await page.keyboard.press(key);
    await settled();
    pressed++;
  };
  // One batch of presses: the walk goes on where it stopped.
  const batch = async () => {
    const until = pressed + BATCH;
    while (pressed < until) {
      const toggle = await page.$eval('#tree .row.selected .toggle', (e) => e.textContent);
      if (toggle === '▸') {
        await press('ArrowRight');
        expanded++;
        if (expanded % 4 === 0) await press('ArrowLeft');
      }
      await press('ArrowDown');
    }
  };
  // A first batch warms up (pages cached, code compiled).
  await batch();
  // What the measuring itself allocates: as many rounds of reading the
  // page as a batch has, without a key.
  let idle = await domHeapOf(renderer);
  for (let k = 0; k < BATCH; k++) {
    await page.$eval('#tree .row.selected .toggle', (e) => e.textContent);
    await settled();
  }
  idle = (await domHeapOf(renderer)) - idle;
  const growth = [];
  const first = { metrics: await metrics(), rss: memoryOf(renderer).rss, pressed };
  const jsHeap = () => page.evaluate(() => performance.memory.usedJSHeapSize);
  let heap = await domHeapOf(renderer);
  let js = await jsHeap();
  while (pressed - first.pressed < Number(presses)) {
    const before = pressed;
    await batch();
    const now = await domHeapOf(renderer);
    const jsNow = await jsHeap();
    growth.push({ presses: pressed - before, bytes: now - heap, js: jsNow - js });
    heap = now;
    js = jsNow;
  }
  const last = { metrics: await metrics(), rss: memoryOf(renderer).rss, pressed };
  const count = last.pressed - first.pressed;
  const per = (name) => (last.metrics[name] - first.metrics[name]) / count;
  const round = (value) => Math.round(value * 1000) / 1000;
  const uncollected = growth.filter((g) => g.bytes >= 0);
  const grown = uncollected.reduce((sum, g) => sum + g.bytes, 0);
  const grownPresses = uncollected.reduce((sum, g) => sum + g.presses, 0);
  const figures = {
    presses: count,
    domHeapKBPerPress: grownPresses ? Math.round(grown / grownPresses / 102.4) / 10 : null,
    measuringKBPerRound: Math.round(idle / BATCH / 102.4) / 10,
    batchesCollected: growth.length - uncollected.length,
    batches: growth.length,
    domHeapKBPerBatch: growth.map((g) => Math.round(g.bytes / 1024)),
    jsHeapKBPerBatch: growth.map((g) => Math.round(g.js / 1024)),
    layoutsPerPress: round(per('LayoutCount')),
    styleRecalcsPerPress: round(per('RecalcStyleCount')),
    layoutMsPerPress: round(per('LayoutDuration') * 1000),
    styleMsPerPress: round(per('RecalcStyleDuration') * 1000),
    scriptMsPerPress: round(per('ScriptDuration') * 1000),
    rssStartMB: first.rss,
    rssEndMB: last.rss,
    load: loadavg(),
  };
  process.stdout.write(`${JSON.stringify(figures, null, 1)}\n`);
} finally {
  await browser.close();
  server.kill();
}
