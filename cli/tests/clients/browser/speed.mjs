// Measures the browser viewer in headless Chromium (not a test: figures
// for BENCHMARKS.md). Run by hand:
//   node speed.mjs TRACETREE WIDE.trace MIXED.trace [EXPANSIONS]
// with WIDE.trace from `tracetree gen --shape wide` (one call with millions
// of children) and MIXED.trace from `tracetree gen` (calls to expand); a
// trace is opened once before measuring, so that its lookups are cached.
// Prints, as JSON: the page's first rows (navigation start to the tree
// drawn), the wide call's expansion (key to its first rows drawn, and to
// its exact count), a scroll to its middle, the flame graph of the wide
// call (key to frames drawn), the flame graph of MIXED's first thread, and
// the page's memory through EXPANSIONS expansions and collapses: its
// JavaScript heap, and its renderer process's resident and anonymous
// (private) memory at the start (the page's elements counted), every
// hundred expansions, at the peak (sampled every 250 ms), at the end and
// once the renderer has collected its garbage; with the load averages at
// the start and end, and the resident memory of an empty page's renderer
// (Chromium's floor).

import { loadavg } from 'node:os';
import { launch, memoryOf, newPage, rendererOf, serve, settled as settledOf } from './measure.mjs';

const [binary, trace, mixed, rounds = '1000'] = process.argv.slice(2);
const { server, url } = await serve(binary, [trace, mixed]);
const { browser, browserSession } = await launch();
const figures = { loadAtStart: loadavg() };

try {
  // Chromium's floor: the renderer of a page with nothing in it.
  const empty = await browser.newPage({ viewport: { width: 1280, height: 800 } });
  await empty.goto('data:text/html,<!doctype html><title>empty</title>');
  await new Promise((resolve) => setTimeout(resolve, 1000));
  figures.emptyPageRendererMB = memoryOf(await rendererOf(browserSession, empty)).rss;
  await empty.close();
  const page = await newPage(browser);
  const settled = () => settledOf(page);
  // A first visit opens the trace (its lookups built and cached).
  await page.goto(url);
  await settled();
  // A fresh page on the open trace: the first tree drawn.
  const fresh = await browser.newPage({ viewport: { width: 1280, height: 800 } });
  await fresh.goto(url);
  await fresh.waitForSelector('#tree .row.thread');
  figures.firstRowsMs = await fresh.evaluate(() => performance.getEntriesByName('first-rows')[0].startTime);
  await fresh.close();
  await page.focus('#tree');
  for (const key of ['Enter', 'ArrowDown', 'ArrowRight', 'ArrowDown']) {
    await page.keyboard.press(key);
    await settled();
  }
  // The wide call: from the key to its first children drawn.
  const start = await page.evaluate(() => performance.now());
  await page.keyboard.press('ArrowRight');
  const drawn = await page.waitForFunction(() => {
    const rows = document.querySelectorAll('#tree .row');
    return rows.length > 10 && !document.querySelector('#tree .row.loading') && performance.now();
  }, null, { polling: 'raf' });
  figures.expandMs = (await drawn.jsonValue()) - start;
  const counted = await page.waitForFunction(() => {
    const count = document.querySelector('#tree .row.selected .count')?.textContent ?? '';
    return count && !count.endsWith('+') && [performance.now(), count];
  }, null, { polling: 'raf' });
  const [countedAt, children] = await counted.jsonValue();
  figures.children = Number(children);
  figures.countedMs = countedAt - start;
  const scrollStart = await page.evaluate(() => {
    const tree = document.querySelector('#tree');
    tree.scrollTop = (tree.scrollHeight - tree.clientHeight) / 2;
    return performance.now();
  });
  const scrolled = await page.waitForFunction(() => Number(document.querySelector('#tree .row')?.dataset.index) > 1000
    && !document.querySelector('#tree .row.loading') && performance.now(), null, { polling: 'raf' });
  figures.scrollToMiddleMs = (await scrolled.jsonValue()) - scrollStart;
  // The flame graph of the wide call (still selected), from the key to
  // its frames drawn.
  await page.focus('#tree');
  const wideFlameStart = await page.evaluate(() => performance.now());
  await page.keyboard.press('f');
  const wideFlamed = await page.waitForFunction(() => document.querySelector('#flame .frame')
    && !document.querySelector('#flame-pane').dataset.busy && performance.now(), null, { polling: 'raf' });
  figures.flameOfWideCallMs = (await wideFlamed.jsonValue()) - wideFlameStart;
  figures.wideCallTracepoints = await page.$eval('#flame .frame', (frame) => Number(frame.dataset.total));
  await page.keyboard.press('Escape');
  // Calls of the mixed trace expanded depth first, one in four collapsed
  // again, the heap read every hundred.
  await page.goto(`${url}#${new URLSearchParams({ trace: mixed })}`);
  await page.waitForFunction((name) => document.querySelector('#trace')?.value === name
    && document.querySelector('#tree .row.thread'), mixed);
  await settled();
  // The flame graph of the first thread, from the key to its frames drawn.
  await page.focus('#tree');
  const flameStart = await page.evaluate(() => performance.now());
  await page.keyboard.press('f');
  const flamed = await page.waitForFunction(() => document.querySelector('#flame .frame')
    && !document.querySelector('#flame-pane').dataset.busy && performance.now(), null, { polling: 'raf' });
  figures.flameOfFirstThreadMs = (await flamed.jsonValue()) - flameStart;
  figures.flameFrames = await page.$$eval('#flame .frame', (frames) => frames.length);
  await page.keyboard.press('Escape');
  await settled();
  figures.elementsAtStart = await page.evaluate(() => document.getElementsByTagName('*').length);
  const heap = async () => (await page.evaluate(() => performance.memory.usedJSHeapSize)) / 2 ** 20;
  figures.heapBeforeMB = await heap();
  let peak = figures.heapBeforeMB;
  const renderer = await rendererOf(browserSession, page);
  const first = memoryOf(renderer);
  const memory = {
    startMB: first.rss, everyHundredMB: [], peakMB: first.rss, endMB: null, collectedMB: null,
    anonStartMB: first.anon, anonEveryHundredMB: [], anonPeakMB: first.anon, anonEndMB: null, anonCollectedMB: null,
  };
  const sample = () => {
    const now = memoryOf(renderer);
    memory.peakMB = Math.max(memory.peakMB, now.rss);
    memory.anonPeakMB = Math.max(memory.anonPeakMB, now.anon);
    return now;
  };
  const sampler = setInterval(sample, 250);
  await page.focus('#tree');
  let expanded = 0;
  while (expanded < Number(rounds)) {
    const toggle = await page.$eval('#tree .row.selected .toggle', (e) => e.textContent);
    if (toggle === '▸') {
      await page.keyboard.press('ArrowRight');
      await settled();
      expanded++;
      if (expanded % 4 === 0) {
        await page.keyboard.press('ArrowLeft');
        await settled();
      }
      if (expanded % 100 === 0) {
        peak = Math.max(peak, await heap());
        const now = sample();
        memory.everyHundredMB.push(now.rss);
        memory.anonEveryHundredMB.push(now.anon);
      }
    }
    await page.keyboard.press('ArrowDown');
    await settled();
  }
  figures.expansions = Number(rounds);
  figures.heapPeakMB = peak;
  figures.heapAfterMB = await heap();
  clearInterval(sampler);
  const end = sample();
  [memory.endMB, memory.anonEndMB] = [end.rss, end.anon];
  // What of it the renderer frees once it collects its garbage (DOM and
  // JavaScript) and is told memory is short.
  const session = await page.context().newCDPSession(page);
  await session.send('HeapProfiler.collectGarbage');
  await session.send('Memory.simulatePressureNotification', { level: 'critical' });
  await new Promise((resolve) => setTimeout(resolve, 1000));
  const collected = memoryOf(renderer);
  [memory.collectedMB, memory.anonCollectedMB] = [collected.rss, collected.anon];
  figures.renderer = memory;
  figures.rowsInPage = await page.$$eval('#tree .row', (rows) => rows.length);
  figures.domNodes = await page.evaluate(() => document.getElementsByTagName('*').length);
  figures.loadAtEnd = loadavg();
  process.stdout.write(`${JSON.stringify(figures, null, 1)}\n`);
} finally {
  await browser.close();
  server.kill();
}
