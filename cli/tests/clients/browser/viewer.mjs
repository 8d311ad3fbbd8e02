// The browser viewer of `tracetree serve --http` in headless Chromium,
// driven by playwright-core as a person would drive it: keys, scrolling,
// the search box, a deep link. Run by cli/tests/cli/web.rs with one
// argument, a JSON file:
//   {url, chromium, shots, mixed: {name, print, dump}, wide: {name, print},
//    search: {pattern, hits}, diff: {name, changes}}
// where `print` is a file of `tracetree print --verbose` and `hits` one of
// `tracetree search --json`. Prints `ok` alone when every check passes.

import { readFileSync, writeFileSync } from 'node:fs';
import { inflateSync } from 'node:zlib';
import assert from 'node:assert/strict';
import { chromium } from 'playwright-core';

const config = JSON.parse(readFileSync(process.argv[2], 'utf8'));
const PATIENCE = 60_000;

/** `print --verbose`'s node lines (thread headers left out). */
function nodeLines(file) {
  return readFileSync(file, 'utf8').split('\n').filter((l) => l && !l.startsWith('# Thread '));
}

const browser = await chromium.launch({
  executablePath: config.chromium,
  headless: true,
  args: [
    '--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
    '--disable-background-networking', '--disable-component-update', '--disable-sync',
  ],
});
const errors = [];
try {
  const page = await browser.newPage({ viewport: { width: 1280, height: 760 } });
  page.setDefaultTimeout(PATIENCE);
  page.on('pageerror', (error) => errors.push(`page error: ${error.message}`));
  page.on('console', (message) => {
    if (message.type() === 'error') errors.push(`console: ${message.text()}`);
  });
  const hash = (name, node) => `#${new URLSearchParams(node ? { trace: name, node } : { trace: name })}`;

  // The rows in view: index, depth, text, handle.
  const rows = () => page.$$eval('#tree .row', (elements) => elements.map((e) => ({
    index: Number(e.dataset.index),
    depth: Number(e.dataset.depth),
    text: e.querySelector('.text').textContent,
    handle: e.dataset.handle ?? null,
    loading: e.classList.contains('loading'),
    selected: e.classList.contains('selected'),
  })));
  const selected = async () => {
    // The row drawn for the selection (`data-selected` is set at once,
    // the rows at the next frame).
    await page.waitForFunction(() => {
      const row = document.querySelector('#tree .row.selected');
      return row && !row.classList.contains('loading')
        && row.dataset.index === (document.querySelector('#tree').dataset.selected ?? '0');
    });
    return (await rows()).find((r) => r.selected);
  };
  const line = (row) => `${'  '.repeat(row.depth)}${row.text}`;
  const press = async (key) => {
    await page.keyboard.press(key);
  };

  // 1. The mixed trace: the first tree painted, a root expanded by keys, then
  // the first rows walked with everything expanded: print's lines.
  await page.goto(config.url + hash(config.mixed.name));
  await page.waitForSelector('#tree .row.thread');
  await page.focus('#tree');
  const mixed = nodeLines(config.mixed.print);
  await press('Enter'); // the first thread
  await press('ArrowDown'); // its first root
  await press('ArrowRight');
  let root = await selected();
  assert.equal(line(root), mixed[0], 'the first root is print\'s first line');
  await page.waitForFunction(() => document.querySelectorAll('#tree .row').length > 3
    && !document.querySelector('#tree .row.loading'));
  const shown = (await rows()).filter((r) => r.index > root.index && r.depth === 1).slice(0, 10);
  const rootChildren = mixed.slice(1).filter((l) => /^ {2}\S/.test(l)).slice(0, shown.length);
  assert.deepEqual(shown.map(line), rootChildren, 'a root\'s children are print\'s lines');
  // Depth first through the first 150 rows, expanding every call: the
  // rows are print's lines in order.
  const walked = [line(root)];
  for (let k = 1; k < 150; k++) {
    await press('ArrowDown');
    const row = await selected();
    if (row.handle?.startsWith('thread:')) break;
    walked.push(line(row));
    const toggle = await page.$eval('#tree .row.selected .toggle', (e) => e.textContent);
    if (toggle === '▸') {
      await press('ArrowRight');
      await page.waitForFunction(() => !document.querySelector('#tree .row.loading'));
    }
  }
  assert.deepEqual(walked, mixed.slice(0, walked.length), 'rows expanded depth first are print\'s lines');
  // Left goes to the parent, then collapses it.
  await press('ArrowLeft');
  await press('ArrowLeft');
  await press('Home');
  assert.equal((await selected()).index, 0);
  await page.screenshot({ path: `${config.shots}/tree.png` });
  checkNotBlank(await page.screenshot(), 'the tree');

  // 2. The wide trace: a call with hundreds of thousands of children,
  // paged as it scrolls (the list holds only the rows in view).
  await page.goto(config.url + hash(config.wide.name));
  await page.waitForFunction((name) => document.querySelector('#trace')?.value === name
    && document.querySelector('#tree .row.thread'), config.wide.name);
  await page.focus('#tree');
  const wide = nodeLines(config.wide.print);
  await press('Enter');
  await press('ArrowDown');
  await press('ArrowRight');
  await page.waitForFunction(() => document.querySelectorAll('#tree .row').length >= 3
    && !document.querySelector('#tree .row.loading'));
  await press('ArrowDown');
  await press('ArrowRight'); // the wide call
  await page.waitForFunction(() => document.querySelectorAll('#tree .row').length > 10
    && !document.querySelector('#tree .row.loading'));
  // Row k is print's node line k - 1 (the thread's row comes first) while
  // in the wide call's children.
  const children = wide.length - 2;
  const inView = await page.$$eval('#tree .row', (e) => e.length);
  assert.ok(inView < 200, `only the rows in view are in the page (${inView})`);
  for (const fraction of [0.5, 0.999, 0.25]) {
    await page.$eval('#tree', (tree, f) => { tree.scrollTop = f * (tree.scrollHeight - tree.clientHeight); }, fraction);
    // Drawn at the next frame, from pages fetched then.
    await page.waitForFunction(([first, slack]) => Math.abs(Number(document.querySelector('#tree .row')?.dataset.index) - first) < slack
      && !document.querySelector('#tree .row.loading'), [fraction * children, children / 100 + 50]);
    const visible = await rows();
    assert.ok(visible.length > 5, 'rows are drawn after a scroll');
    for (const row of visible) {
      assert.ok(row.index >= 3 && row.index < 3 + children, `row ${row.index} inside the wide call`);
      assert.equal(line(row), wide[row.index - 1], `row ${row.index} after scrolling to ${fraction}`);
    }
  }
  await page.focus('#tree');
  await press('End');
  const last = await selected();
  assert.equal(line(last), wide[wide.length - 1], 'End selects the last child');
  checkNotBlank(await page.screenshot({ path: `${config.shots}/wide.png` }), 'the wide call');

  // 3. Search in the mixed trace: as many hits as `tracetree search`, the
  // same lines, stepped through with n and N.
  await page.goto(config.url + hash(config.mixed.name));
  await page.waitForSelector('#tree .row.thread');
  const expected = readFileSync(config.search.hits, 'utf8').split('\n').filter(Boolean).map((l) => JSON.parse(l));
  await page.fill('#search', config.search.pattern);
  await page.click('#search-go');
  await page.waitForFunction(() => /^\d+ hits/.test(document.querySelector('#hits-head').textContent));
  const head = await page.textContent('#hits-head');
  assert.equal(Number(head.split(' ')[0]), expected.length, `hits: ${head}`);
  const hits = await page.$$eval('#hits li', (items) => items.map((li) => ({
    handle: li.dataset.handle,
    text: li.firstChild.textContent,
    path: li.querySelector('.path').textContent,
  })));
  const sorted = (list) => [...list].sort();
  assert.deepEqual(sorted(hits.map((h) => h.text)), sorted(expected.map((h) => h.line)), 'the hits\' lines');
  assert.deepEqual(
    sorted(hits.map((h) => h.path)),
    sorted(expected.map((h) => `thread ${h.thread + 1}: ${h.path.join(' › ') || '(top level)'}`)),
    'the hits\' paths',
  );
  await page.focus('#tree');
  const visited = [];
  for (const key of ['n', 'n', 'n', 'N']) {
    await press(key);
    await page.waitForFunction((at) => document.querySelector('#hits-head').dataset.current === String(at),
      (visited.length === 0 ? 1 : visited.at(-1) + (key === 'n' ? 1 : -1) + hits.length) % hits.length);
    const at = Number(await page.$eval('#hits-head', (e) => e.dataset.current));
    visited.push(at);
    // The selected row settles on the hit (rows above it may still be
    // redrawn while the hit's ancestors open): one check of handle and text.
    const settled = await page.waitForFunction(([handle, text]) => {
      const row = document.querySelector('#tree .row.selected');
      return row && !row.classList.contains('loading') && row.dataset.handle === handle
        && row.querySelector('.text').textContent.startsWith(text);
    }, [hits[at].handle, hits[at].text]).then(() => true, () => false);
    const row = await selected();
    assert.ok(settled, `hit ${at}: ${row.text} is ${hits[at].text}`);
  }
  assert.deepEqual(visited, [1, 2, 3, 2].map((k) => k % hits.length));
  // Keys faster than the jumps: the last one wins, however they finish.
  for (const key of ['n', 'n', 'n']) await press(key);
  const lastHit = hits[(visited.at(-1) + 3) % hits.length].handle;
  await page.waitForFunction((handle) => document.querySelector('#tree .row.selected')?.dataset.handle === handle
    && document.querySelector('#status').textContent.endsWith(`node ${handle}`), lastHit);
  await page.waitForTimeout(300);
  assert.equal((await selected()).handle, lastHit, 'the last hit asked for stays selected');
  checkNotBlank(await page.screenshot({ path: `${config.shots}/search.png` }), 'the search');

  // 4. A deep link: a fresh page on a hit's handle opens the trace with its
  // ancestors expanded and the node selected.
  const target = hits[hits.length - 1];
  const fresh = await browser.newPage({ viewport: { width: 1280, height: 760 } });
  fresh.setDefaultTimeout(PATIENCE);
  fresh.on('pageerror', (error) => errors.push(`page error: ${error.message}`));
  await fresh.goto(config.url + hash(config.mixed.name, target.handle));
  await fresh.waitForFunction((handle) => {
    const row = document.querySelector('#tree .row.selected');
    return row?.dataset.handle === handle;
  }, target.handle);
  const linked = await fresh.$eval('#tree .row.selected', (e) => e.querySelector('.text').textContent);
  assert.ok(linked.startsWith(target.text), `the deep link's node: ${linked}`);
  await fresh.waitForFunction((handle) => document.querySelector('#details dd')?.textContent !== undefined
    && [...document.querySelectorAll('#details dd')].some((dd) => dd.textContent === handle), target.handle);
  checkNotBlank(await fresh.screenshot({ path: `${config.shots}/deep-link.png` }), 'the deep link');

  // 5. The flame graph of a node (the first thread's first root): each
  // frame's total is a count over `dump`'s rows of its path, its width that
  // count's share of the view, and every path a pixel wide is drawn; then
  // zoomed into a frame, the same at the new scale; then the sandwich of
  // that frame weighs its outermost calls.
  const dump = readFileSync(config.mixed.dump, 'utf8').split('\n').filter(Boolean).map((l) => JSON.parse(l));
  const subtree = [dump[0]];
  for (const row of dump.slice(1)) {
    if (row.thread !== dump[0].thread || row.depth <= dump[0].depth) break;
    subtree.push(row);
  }
  let counted = flameCounts(subtree);
  const flame = await browser.newPage({ viewport: { width: 1280, height: 760 } });
  flame.setDefaultTimeout(PATIENCE);
  flame.on('pageerror', (error) => errors.push(`page error: ${error.message}`));
  await flame.goto(config.url + hash(config.mixed.name));
  await flame.waitForSelector('#tree .row.thread');
  await flame.focus('#tree');
  await flame.keyboard.press('Enter');
  await flame.keyboard.press('ArrowDown');
  await flame.waitForFunction(() => {
    const row = document.querySelector('#tree .row.selected');
    return row && !row.classList.contains('loading') && row.dataset.handle && !row.dataset.handle.startsWith('thread:');
  });
  // The engine's flame graph walks asked for, and the last one's params.
  let flameWalks = 0;
  let lastWalk = null;
  flame.on('request', (request) => {
    if (request.method() === 'POST' && request.postData()?.includes('"trace/flame"')) {
      flameWalks++;
      lastWalk = JSON.parse(request.postData()).params;
    }
  });
  await flame.keyboard.press('f');
  const drawnFrames = async () => {
    await flame.waitForFunction(() => document.querySelectorAll('#flame .frame').length > 0
      && !document.querySelector('#flame-pane').dataset.busy);
    return flame.$$eval('#flame .frame', (elements) => elements.map((e) => ({
      index: Number(e.dataset.index),
      path: e.dataset.path,
      total: Number(e.dataset.total),
      left: parseFloat(e.style.left),
      width: parseFloat(e.style.width),
      other: Number(e.dataset.other),
      threshold: Number(e.dataset.threshold),
      above: e.classList.contains('above'),
    })));
  };
  // Checks the frames in view against the counts: `view` the path zoomed
  // into (its total fills the width).
  let graphWidth = 0;
  const checkView = async (frames, view) => {
    graphWidth = await flame.$eval('#flame', (e) => e.clientWidth);
    const viewTotal = counted.get(view);
    const inside = frames.filter((f) => !f.above);
    assert.equal(inside[0].path, view, 'the frame in view comes first');
    for (const frame of inside) {
      assert.equal(frame.total, counted.get(frame.path), `the count of ${frame.path}`);
      assert.ok(Math.abs(frame.width - (frame.total / viewTotal) * graphWidth) < 0.05, `the width of ${frame.path}`);
    }
    const prefix = view.slice(0, -1);
    const wide = [...counted].filter(([path, total]) => path.startsWith(prefix) && total * graphWidth >= viewTotal)
      .map(([path]) => path).sort();
    assert.deepEqual(inside.map((f) => f.path).sort(), wide, 'every path a pixel wide is drawn, no other');
  };
  let frames = await drawnFrames();
  const flameRoot = JSON.stringify([frameName(subtree[0])]);
  await checkView(frames, flameRoot);
  assert.equal(frames[0].width, graphWidth, 'the root spans the view');
  await flame.screenshot({ path: `${config.shots}/flame.png` });
  checkNotBlank(await flame.screenshot(), 'the flame graph');
  // Zoomed into the widest frame below the root that has frames below it.
  const zoomTarget = frames.filter((f) => JSON.parse(f.path).length === 2
    && frames.some((g) => g.path.startsWith(f.path.slice(0, -1) + ',')))
    .sort((a, b) => b.total - a.total)[0];
  assert.ok(zoomTarget, 'a frame to zoom into');
  // The summary drawn at the root's scale resolves the frame (every frame
  // under it a pixel wide once it spans the view) only when nothing under
  // it was left out: else the engine walks again, once.
  const leftOut = frames.some((f) => f.other > 0
    && (f.path === zoomTarget.path || f.path.startsWith(zoomTarget.path.slice(0, -1) + ',')));
  const walksBefore = flameWalks;
  await flame.click(`#flame .frame[data-index="${zoomTarget.index}"]`);
  await flame.waitForFunction((path) => {
    const zoomed = document.querySelector('#flame .frame:not(.above)');
    return zoomed?.dataset.path === path && !document.querySelector('#flame-pane').dataset.busy;
  }, zoomTarget.path);
  frames = await drawnFrames();
  const zoomed = frames.find((f) => f.path === zoomTarget.path);
  assert.equal(zoomed.left, 0);
  assert.equal(zoomed.width, graphWidth, 'the frame zoomed into spans the view');
  assert.ok(frames.some((f) => f.above && f.path === flameRoot), 'its ancestors stay above it');
  await checkView(frames, zoomTarget.path);
  const zoomedFrom = await flame.$eval('#flame-pane', (e) => e.dataset.zoomedFrom);
  assert.equal(zoomedFrom, leftOut ? 'walk' : 'summary', 'zoomed from the summary only when it resolves the frame');
  assert.equal(flameWalks - walksBefore, zoomedFrom === 'walk' ? 1 : 0, 'a walk only when zoomed by one');
  checkNotBlank(await flame.screenshot({ path: `${config.shots}/flame-zoomed.png` }), 'the zoomed flame graph');
  // The link names the trace, the node, the flame graph and the zoom: a
  // fresh page opened on it shows the same frames.
  const link = new URLSearchParams(new URL(flame.url()).hash.slice(1));
  assert.equal(link.get('trace'), config.mixed.name);
  assert.equal(link.get('flame'), '1');
  assert.ok(link.get('node'), 'the link names the node');
  assert.deepEqual(JSON.parse(link.get('zoom')), JSON.parse(zoomTarget.path));
  const fromLink = await browser.newPage({ viewport: { width: 1280, height: 760 } });
  fromLink.setDefaultTimeout(PATIENCE);
  fromLink.on('pageerror', (error) => errors.push(`page error: ${error.message}`));
  await fromLink.goto(flame.url());
  await fromLink.waitForFunction((path) => {
    const zoomed = document.querySelector('#flame .frame:not(.above)');
    return zoomed?.dataset.path === path && !document.querySelector('#flame-pane').dataset.busy
      && document.querySelector('#tree-pane').hidden;
  }, zoomTarget.path);
  const framesFromLink = await fromLink.$$eval('#flame .frame', (elements) => elements
    .map((e) => `${e.dataset.path} ${e.dataset.total} ${e.classList.contains('above')}`).sort());
  assert.deepEqual(framesFromLink, frames.map((f) => `${f.path} ${f.total} ${f.above}`).sort(), 'the link shows the same frames');
  checkNotBlank(await fromLink.screenshot({ path: `${config.shots}/flame-link.png` }), 'the flame graph\'s link');
  await fromLink.close();
  // The sandwich of the frame zoomed into.
  const method = JSON.parse(zoomTarget.path).at(-1);
  await flame.click('#flame-sandwich');
  await flame.waitForFunction(() => !document.querySelector('#sandwich').hidden
    && document.querySelector('#callers .frame') && !document.querySelector('#flame-pane').dataset.busy);
  // Read in one evaluation: frames handed over one by one may have been
  // drawn again (detached) in between.
  const sides = await flame.evaluate(() => [...document.querySelectorAll('#callers .frame, #callees .frame')]
    .map((e) => ({ side: e.parentElement.id, path: e.dataset.path, total: Number(e.dataset.total) })));
  let outermost = 0;
  const callees = new Map();
  for (const [path, total] of counted) {
    const names = JSON.parse(path);
    const at = names.indexOf(method);
    if (at < 0) continue;
    if (at === names.length - 1) outermost += total;
    const key = JSON.stringify(names.slice(at));
    callees.set(key, (callees.get(key) ?? 0) + total);
  }
  const rootOf = (side) => sides.find((s) => s.side === side && s.path === JSON.stringify([method]));
  assert.equal(rootOf('callers').total, outermost, 'the callers\' root weighs the outermost calls');
  assert.equal(rootOf('callees').total, outermost, 'the callees\' root weighs the outermost calls');
  for (const frame of sides.filter((s) => s.side === 'callees')) {
    assert.equal(frame.total, callees.get(frame.path), `the callee ${frame.path}`);
  }
  checkNotBlank(await flame.screenshot({ path: `${config.shots}/sandwich.png` }), 'the sandwich');
  // Back to the root: the finer summary resolves it, no walk.
  const walksAtRoot = flameWalks;
  await flame.click(`#flame .frame.above[data-path='${flameRoot.replaceAll("'", "\\'")}']`);
  await flame.waitForFunction((path) => document.querySelector('#flame .frame:not(.above)')?.dataset.path === path
    && !document.querySelector('#flame .frame.above'), flameRoot);
  assert.equal(await flame.$eval('#flame-pane', (e) => e.dataset.zoomedFrom), 'summary', 'the root zoomed from the summary');
  assert.equal(flameWalks, walksAtRoot, 'no walk to zoom out');
  await checkView(await drawnFrames(), flameRoot);
  assert.ok(!new URL(flame.url()).hash.includes('zoom='), 'the link at the root names no zoom');
  // Closed, the view holds no frame (nor the sandwich's); opened again,
  // it draws the same frames.
  await flame.focus('#flame-pane');
  await flame.keyboard.press('Escape');
  await flame.waitForFunction(() => document.querySelector('#flame-pane').hidden);
  assert.equal(await flame.$$eval('#flame-pane .frame', (e) => e.length), 0, 'a closed flame graph keeps no frame');
  await flame.focus('#tree');
  await flame.keyboard.press('f');
  await checkView(await drawnFrames(), flameRoot);
  // The flame graph of the node's thread, opened from a link: zoomed into
  // the deepest frame drawn that left out frames which would be a pixel
  // wide once it spans the view (under its summary's threshold, not under
  // a pixel), the engine walks only the calls on its path, and the frames
  // it sends, in place of the frame's, are the counts at the new scale,
  // every one a pixel wide drawn; back at the root, no walk.
  // A narrow view: a pixel weighs more, more is left out.
  const threadRows = dump.filter((row) => row.thread === dump[0].thread);
  await flame.setViewportSize({ width: 360, height: 760 });
  await flame.goto(`${config.url}#${new URLSearchParams({ trace: config.mixed.name, flame: `thread:${dump[0].thread}` })}`);
  frames = await drawnFrames();
  const threadRoot = frames[0].path;
  counted = new Map([...flameCounts(threadRows)].map(([key, n]) => [JSON.stringify([...JSON.parse(threadRoot), ...JSON.parse(key)]), n]));
  counted.set(threadRoot, threadRows.length);
  await checkView(frames, threadRoot);
  const deep = frames.filter((f) => !f.above && f.other > 0 && f.width >= 2 && JSON.parse(f.path).length > 1
    && (f.threshold - 1) * graphWidth >= f.total)
    .sort((a, b) => JSON.parse(b.path).length - JSON.parse(a.path).length || a.total - b.total)[0];
  assert.ok(deep, 'a deep frame whose summary left out frames a pixel wide at its scale');
  const walksBeforeDeep = flameWalks;
  await flame.click(`#flame .frame[data-index="${deep.index}"]`);
  await flame.waitForFunction((path) => {
    const zoomed = document.querySelector('#flame .frame:not(.above)');
    return zoomed?.dataset.path === path && !document.querySelector('#flame-pane').dataset.busy;
  }, deep.path);
  assert.equal(await flame.$eval('#flame-pane', (e) => e.dataset.zoomedFrom), 'walk', 'the deep frame needed a walk');
  assert.equal(flameWalks - walksBeforeDeep, 1, 'one walk for the deep frame');
  assert.deepEqual(lastWalk.path, JSON.parse(deep.path).slice(1), 'the walk names the frame\'s path');
  await checkView(await drawnFrames(), deep.path);
  checkNotBlank(await flame.screenshot({ path: `${config.shots}/flame-deep.png` }), 'the deep zoom');
  const walksAtDeep = flameWalks;
  await flame.click(`#flame .frame.above[data-path='${threadRoot.replaceAll("'", "\\'")}']`);
  await flame.waitForFunction((path) => document.querySelector('#flame .frame:not(.above)')?.dataset.path === path
    && !document.querySelector('#flame .frame.above'), threadRoot);
  assert.equal(flameWalks, walksAtDeep, 'no walk to zoom out of the deep frame');
  await checkView(await drawnFrames(), threadRoot);

  // 6. A diff trace: `]` from the top steps through its changes in the
  // order `tracetree search --diff` lists them (threads ascending, each in
  // event order), `[` steps back, also into the thread before; rows are coloured.
  const changes = readFileSync(config.diff.changes, 'utf8').split('\n').filter(Boolean)
    .map((l) => JSON.parse(l));
  assert.ok(changes.length >= 4, `the diff has ${changes.length} changes`);
  const diff = await browser.newPage({ viewport: { width: 1280, height: 760 } });
  diff.setDefaultTimeout(PATIENCE);
  diff.on('pageerror', (error) => errors.push(`page error: ${error.message}`));
  await diff.goto(config.url + hash(config.diff.name));
  await diff.waitForSelector('#tree .row.selected');
  await diff.focus('#tree');
  const selectedText = () => diff.$eval('#tree .row.selected', (e) => e.querySelector('.text').textContent);
  const waitSelected = (text) => diff.waitForFunction((line) => {
    const row = document.querySelector('#tree .row.selected');
    return row && !row.classList.contains('loading') && row.querySelector('.text').textContent.startsWith(line);
  }, text);
  for (const change of changes.slice(0, 4)) {
    await diff.keyboard.press(']');
    await waitSelected(change.line);
    assert.ok((await selectedText()).startsWith(change.line), `the change ${change.eventId}`);
  }
  if (changes[3].thread === changes[2].thread) {
    await diff.keyboard.press('[');
    await waitSelected(changes[2].line);
  }
  // `]` from the second thread's row finds that thread's first change, and
  // `[` from there the last change of the first thread.
  const [first, second] = [...new Set(changes.map((c) => c.thread))];
  assert.ok(second !== undefined, 'both threads of the diff have changes');
  await diff.keyboard.press('Home');
  await diff.keyboard.press('ArrowLeft');
  await diff.keyboard.press('ArrowDown');
  await diff.keyboard.press(']');
  await waitSelected(changes.find((c) => c.thread === second).line);
  await diff.keyboard.press('[');
  await waitSelected(changes.filter((c) => c.thread === first).at(-1).line);
  const coloured = await diff.$$eval('#tree .row', (rows) => rows.filter((r) => /diff-(added|removed|edited)/.test(r.className)).length);
  assert.ok(coloured > 0, 'changed rows are coloured');
  checkNotBlank(await diff.screenshot({ path: `${config.shots}/diff.png` }), 'the diff');
  // 7. A server of a folder: its files are in the trace menu, and the
  // first one opens with print's tree.
  const folder = await browser.newPage({ viewport: { width: 1280, height: 760 } });
  folder.setDefaultTimeout(PATIENCE);
  folder.on('pageerror', (error) => errors.push(`page error: ${error.message}`));
  await folder.goto(config.root.url);
  await folder.waitForSelector('#tree .row.thread');
  const menu = await folder.$$eval('#trace option', (options) => options.map((o) => o.value));
  assert.deepEqual(menu, [config.root.file], 'the trace menu lists the folder');
  assert.match(folder.url(), /#trace=sub%2Fmixed\.trace/, 'the link names the file');
  await folder.focus('#tree');
  await folder.keyboard.press('Enter');
  const firstNode = nodeLines(config.root.print)[0].trim();
  await folder.waitForFunction((text) => [...document.querySelectorAll('#tree .row .text')]
    .some((e) => e.textContent === text), firstNode);
  checkNotBlank(await folder.screenshot({ path: `${config.shots}/root.png` }), 'the folder');
  assert.deepEqual(errors, [], 'no error in the page');
  process.stdout.write('ok\n');
} catch (error) {
  // What the page said explains most failures.
  for (const line of errors) process.stderr.write(`${line}\n`);
  throw error;
} finally {
  await browser.close();
}

/** A PNG that is not one colour, decoded by hand (8-bit RGB or RGBA, not
 * interlaced: what Chromium writes). */
function checkNotBlank(png, what) {
  assert.equal(png.subarray(1, 4).toString('latin1'), 'PNG', `${what}: a PNG`);
  let at = 8;
  let width = 0;
  let height = 0;
  let channels = 0;
  const data = [];
  while (at < png.length) {
    const length = png.readUInt32BE(at);
    const type = png.subarray(at + 4, at + 8).toString('latin1');
    const body = png.subarray(at + 8, at + 8 + length);
    if (type === 'IHDR') {
      width = body.readUInt32BE(0);
      height = body.readUInt32BE(4);
      assert.equal(body[8], 8, `${what}: 8-bit`);
      channels = { 2: 3, 6: 4 }[body[9]];
      assert.ok(channels && body[12] === 0, `${what}: RGB(A), not interlaced`);
    } else if (type === 'IDAT') {
      data.push(body);
    }
    at += 12 + length;
  }
  const raw = inflateSync(Buffer.concat(data));
  const stride = width * channels;
  const pixels = Buffer.alloc(stride * height);
  for (let y = 0; y < height; y++) {
    const filter = raw[y * (stride + 1)];
    const line = raw.subarray(y * (stride + 1) + 1, (y + 1) * (stride + 1));
    for (let x = 0; x < stride; x++) {
      const a = x >= channels ? pixels[y * stride + x - channels] : 0;
      const b = y > 0 ? pixels[(y - 1) * stride + x] : 0;
      const c = x >= channels && y > 0 ? pixels[(y - 1) * stride + x - channels] : 0;
      const p = a + b - c;
      const paeth = Math.abs(p - a) <= Math.abs(p - b) && Math.abs(p - a) <= Math.abs(p - c)
        ? a : Math.abs(p - b) <= Math.abs(p - c) ? b : c;
      const predictor = [0, a, b, (a + b) >> 1, paeth][filter];
      pixels[y * stride + x] = (line[x] + predictor) & 0xff;
    }
  }
  const colours = new Map();
  for (let k = 0; k < pixels.length; k += channels) {
    const colour = pixels.readUIntBE(k, 3);
    colours.set(colour, (colours.get(colour) ?? 0) + 1);
  }
  const background = Math.max(...colours.values());
  const drawn = (width * height - background) / (width * height);
  assert.ok(colours.size > 8 && drawn > 0.01, `${what}: the screenshot is blank (${colours.size} colours, ${drawn} drawn)`);
  writeFileSync(`${config.shots}/last-checked.txt`, `${what}: ${colours.size} colours, ${(drawn * 100).toFixed(1)}% drawn\n`);
}

/** A `dump` row's frame: a call's method, a loop's or iteration's kind. */
function frameName(row) {
  if (row.kind === 'method_call') return row.method;
  return row.kind === 'loop' || row.kind === 'loop_iteration' ? row.kind : null;
}

/** Paths of frame names (as JSON) → the tracepoints below them, counted
 * over the rows of one subtree (pre-order, as `dump` writes them). */
function flameCounts(rows) {
  const counts = new Map();
  const open = [];
  for (const row of rows) {
    open.length = row.depth - rows[0].depth;
    const frame = frameName(row);
    const path = frame ? [...open, frame] : [...open];
    if (frame) open.push(frame);
    for (let k = 1; k <= path.length; k++) {
      const key = JSON.stringify(path.slice(0, k));
      counts.set(key, (counts.get(key) ?? 0) + 1);
    }
  }
  return counts;
}
