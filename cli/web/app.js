// The browser viewer: the traces the server serves, each a tree browsed
// as the terminal viewer browses it (keys included), the details of the
// selected node, a thread filter, search with its hits' paths, and deep
// links (`#trace=NAME&node=HANDLE`, with `&flame=1` (the node's), `thread:N`
// or `all` and `&zoom=PATH` while a flame graph is shown: a reload reopens
// the same place).

import { Rpc, CANCELLED } from './rpc.js';
import { Tree } from './tree.js';
import { VirtualList } from './list.js';
import { FlameView } from './flame.js';

const ROW = 20;
/** Milliseconds the selection rests before the URL and the details pane
 * follow it: a key held down moves it dozens of times a second, and each
 * history entry replaced, node asked for and pane laid out again leaves
 * the browser's DOM heap garbage that only its next collection frees. */
const REST = 120;
const $ = (id) => document.getElementById(id);

const state = {
  rpc: null,
  served: [],
  name: null,
  trace: null,
  threads: [],
  tree: null,
  list: null,
  selected: 0,
  hits: [],
  hit: -1,
  hitHandles: new Set(),
  search: null,
  jumps: 0,
  flame: null,
  // The files under the server's `--root` (`trace/files`), or null.
  rootFiles: null,
};

function status(text, error = false) {
  const element = $('status');
  element.textContent = text;
  element.classList.toggle('error', error);
}

function fail(error) {
  if (error && error.code === CANCELLED) return status('cancelled');
  status(error instanceof Error ? error.message : String(error), true);
  console.error(error);
}

function readHash() {
  const params = new URLSearchParams(location.hash.slice(1));
  return { trace: params.get('trace'), node: params.get('node'), flame: params.get('flame'), zoom: params.get('zoom') };
}

/** Names the trace and `node` in the URL, and the flame graph shown
 * (`flame`: its scope's link, `zoom`: the path zoomed into). A link
 * pending from `writeHashSoon` is dropped: this one is newer. */
function writeHash(node, flame = null, zoom = null) {
  clearTimeout(hashTimer);
  const params = new URLSearchParams();
  if (state.name !== null) params.set('trace', state.name);
  if (node) params.set('node', node);
  if (flame) params.set('flame', flame);
  if (flame && zoom && zoom.length > 1) params.set('zoom', JSON.stringify(zoom));
  const hash = `#${params}`;
  if (location.hash === hash) return;
  history.replaceState(null, '', `${location.pathname}${location.search}${hash}`);
}

/** Names `node` in the URL once the selection rests (`REST`). */
let hashTimer = 0;
function writeHashSoon(node) {
  clearTimeout(hashTimer);
  hashTimer = setTimeout(() => writeHash(node), REST);
}

async function main() {
  const token = new URLSearchParams(location.search).get('token');
  if (!token) return status('no token in the URL: open the URL the server printed', true);
  state.rpc = new Rpc(token);
  await state.rpc.connect();
  const init = await state.rpc.call('initialize', { processId: null, capabilities: {} });
  state.served = init.served?.traces ?? [];
  const select = $('trace');
  for (const trace of state.served) select.append(new Option(trace.name, trace.name));
  if (init.served?.root) await listRoot(select);
  state.rpc.on('trace/grown', grown);
  state.list = new VirtualList($('tree'), ROW, renderRow);
  bindKeys();
  bindSearch();
  bindFlame();
  select.addEventListener('change', () => openTrace(select.value).catch(fail));
  $('thread').addEventListener('change', () => showThreads());
  window.addEventListener('hashchange', () => followHash().catch(fail));
  await followHash();
  $('tree').focus();
}

/** Adds the files under the server's `--root` to the trace menu. */
async function listRoot(select) {
  const { files, truncated } = await state.rpc.call('trace/files', {});
  state.rootFiles = files;
  if (files.length === 0) return;
  const group = document.createElement('optgroup');
  group.label = 'under --root';
  for (const file of files) group.append(new Option(file, file));
  if (truncated) {
    const more = new Option('… more: name one in the URL (#trace=PATH)');
    more.disabled = true;
    group.append(more);
  }
  select.append(group);
}

/** Opens what the URL's hash names (else the first trace), and its node:
 * a served trace, or with `--root` any path under it (the server checks). */
async function followHash() {
  const { trace, node, flame, zoom } = readHash();
  const named = trace && (state.rootFiles || state.served.some((t) => t.name === trace));
  const name = named ? trace : (state.served[0]?.name ?? state.rootFiles?.[0]);
  if (!name) return status(state.rootFiles ? 'no file under the served folder' : 'this server serves no trace');
  if (name !== state.name) await openTrace(name);
  if (node) await goTo(node);
  let path = null;
  try {
    path = zoom ? JSON.parse(zoom) : null;
  } catch {
    status('the link\'s zoom is not a path', true);
  }
  if (flame) await openFlame(linkedScope(flame, node), Array.isArray(path) ? path.map(String) : null);
  else if (!$('flame-pane').hidden) closeFlame();
}

/** The flame graph's scope a link names (`flame=`): the node's (`1`), a
 * thread's (`thread:N`), or every thread's (`all`). */
function linkedScope(flame, node) {
  const thread = /^thread:(\d+)$/.exec(flame);
  if (thread) return { trace: state.trace, thread: Number(thread[1]), title: `thread ${Number(thread[1]) + 1}`, link: flame };
  if (flame === '1' && node) {
    const row = state.tree.row(state.selected);
    return { trace: state.trace, node, title: row?.handle === node ? row.text : node, link: '1' };
  }
  return { trace: state.trace, title: 'every thread', link: 'all' };
}

async function openTrace(name) {
  const served = state.served.find((t) => t.name === name);
  status(`opening ${name}…`);
  const token = state.rpc.token_for((value) => {
    if (value.kind === 'report' && value.message) status(`opening ${name}: ${value.message}`);
  });
  const options = served?.follow ? { growing: true } : {};
  let opened;
  try {
    opened = await state.rpc.call('trace/open', { path: name, options, workDoneToken: token });
  } finally {
    state.rpc.forget(token);
  }
  state.name = name;
  state.trace = opened.trace;
  state.threads = opened.threads;
  if (![...$('trace').options].some((o) => o.value === name)) $('trace').append(new Option(name, name));
  $('trace').value = name;
  const threads = $('thread');
  threads.replaceChildren(new Option('all threads', 'all'));
  for (const t of opened.threads) threads.append(new Option(`${t.id + 1} (${t.name}) · ${t.roots} roots`, String(t.id)));
  state.selected = 0;
  clearHits();
  state.tree = new Tree(state.rpc, state.trace, opened.threads, (error) => {
    if (error) fail(error);
    redraw();
  });
  redraw();
  if (served?.follow) await state.rpc.call('trace/follow', { trace: state.trace });
  const counted = opened.tracepoints === null ? '' : ` · ${opened.tracepoints} tracepoints`;
  const warned = opened.warnings.length ? ` · ${opened.warnings.join('; ')}` : '';
  status(`${name} · ${opened.threads.length} threads${counted} · ${opened.status}${warned}`);
  writeHash(null);
  showDetails();
}

function grown(params) {
  if (params.trace !== state.trace) return;
  if (params.error) return status(params.error, true);
  state.threads = params.threads;
  const chosen = $('thread').value;
  const threads = chosen === 'all' ? state.threads : state.threads.filter((t) => String(t.id) === chosen);
  if (params.reopened || !state.tree.refresh(threads)) showThreads();
  status(`${state.name}: grown (${new Date().toLocaleTimeString()})`);
}

function showThreads() {
  const chosen = $('thread').value;
  const threads = chosen === 'all' ? state.threads : state.threads.filter((t) => String(t.id) === chosen);
  state.selected = 0;
  state.tree.setThreads(threads);
  if (threads.length === 1) state.tree.expand(state.tree.root, 0).catch(fail);
}

function redraw() {
  if (!state.tree) return;
  const count = state.tree.count;
  // For measurements: when rows were first there to draw.
  if (count > 0 && performance.getEntriesByName('first-rows').length === 0) performance.mark('first-rows');
  if (state.selected >= count) state.selected = Math.max(0, count - 1);
  $('tree').dataset.selected = String(state.selected);
  state.list.setCount(count);
}

function renderRow(i, element) {
  const tree = state.tree;
  const { parent, index, item } = tree.locate(i);
  const row = tree.rowOf(parent, index);
  let depth = -1;
  for (let p = parent; p && p.parent; p = p.parent) depth++;
  element.dataset.index = i;
  element.style.paddingLeft = `${(depth + 1) * 16 + 4}px`;
  let toggle = element.firstChild;
  if (!toggle) {
    toggle = document.createElement('span');
    toggle.className = 'toggle';
    const text = document.createElement('span');
    text.className = 'text';
    const count = document.createElement('span');
    count.className = 'count';
    element.append(toggle, text, count);
  }
  const [, text, count] = element.children;
  let classes = 'row';
  if (i === state.selected) classes += ' selected';
  if (!row) {
    classes += ' loading';
    toggle.textContent = ' ';
    text.textContent = '…';
    count.textContent = '';
    element.dataset.depth = depth;
    delete element.dataset.handle;
  } else {
    if (row.kind === 'thread') classes += ' thread';
    if (row.diff) classes += ` diff-${row.diff}`;
    if (state.hitHandles.has(row.handle)) classes += ' hit';
    toggle.textContent = row.hasChildren ? (item ? '▾' : '▸') : ' ';
    text.textContent = row.text;
    // An expanded call's count as counted since.
    const [children, exact] = item ? [item.total, item.exact] : [row.childCount, row.childCountExact];
    count.textContent = row.hasChildren && row.kind !== 'thread' ? `${children}${exact ? '' : '+'}` : '';
    element.dataset.depth = row.depth;
    element.dataset.handle = row.handle;
  }
  element.className = classes;
}

function select(i, reveal = true) {
  const count = state.tree?.count ?? 0;
  if (count === 0) return;
  state.selected = Math.max(0, Math.min(count - 1, i));
  $('tree').dataset.selected = String(state.selected);
  if (reveal) state.list.reveal(state.selected);
  state.list.schedule();
  const row = state.tree.row(state.selected);
  if (row && row.kind !== 'thread') writeHashSoon(row.handle);
  showDetails();
}

let detailsTimer = 0;
function showDetails() {
  clearTimeout(detailsTimer);
  detailsTimer = setTimeout(async () => {
    const row = state.tree?.row(state.selected);
    if (!row) return;
    if (row.kind === 'thread') {
      showDefinitions(null, 'thread', [['thread', `${row.thread}`], ['roots', `${row.childCount}`]]);
      return;
    }
    try {
      const node = await state.rpc.call('trace/node', { trace: state.trace, node: row.handle });
      if (state.tree.row(state.selected)?.handle !== row.handle) return;
      const location = node.location
        ? `${node.location.file ?? '?'}:${node.location.line} (${node.location.className ?? ''}.${node.location.methodName ?? ''})`
        : null;
      const fields = [
        ['kind', node.kind], ['event id', node.eventId], ['handle', node.handle], ['thread', node.thread],
        ['depth', node.depth], ['children', `${node.childCount}${node.childCountExact ? '' : '+'}`],
        ['location', location], ['method', node.method], ['receiver', node.receiver],
        ['arguments', node.arguments?.join(', ')], ['result', node.result], ['exception', node.exception],
        ['field', node.field], ['variable', node.variable], ['array', node.array], ['index', node.index],
        ['value', node.value], ['iteration', node.iteration],
        ['diff', node.diffStatus === 'none' ? null : node.diffStatus],
        ['unfinished', node.unfinished ? 'yes' : null],
      ];
      showDefinitions(node.text, 'node', fields);
    } catch (error) {
      fail(error);
    }
  }, REST);
}

/** The details pane's elements, made once and filled in place for each
 * row selected (the pane follows every move of the selection): a node's
 * heading, the list of a node's fields and that of a thread's, each list
 * with its terms by name. */
const details = {
  heading: Object.assign(document.createElement('p'), { className: 'line' }),
  node: document.createElement('dl'),
  thread: document.createElement('dl'),
  terms: new Map(),
};

/** Shows `heading` (none when null) and `fields` (`[name, value]`, empty
 * values hidden) in the list `kind` (`node` or `thread`), always given the
 * same names in the same order. */
function showDefinitions(heading, kind, fields) {
  const list = details[kind];
  const shown = heading === null ? [list] : [details.heading, list];
  const pane = $('details');
  if (pane.children.length !== shown.length || shown.some((e, i) => pane.children[i] !== e)) pane.replaceChildren(...shown);
  if (heading !== null) details.heading.textContent = heading;
  for (const [name, value] of fields) {
    const key = `${kind}:${name}`;
    let pair = details.terms.get(key);
    if (!pair) {
      const term = document.createElement('dt');
      term.textContent = name;
      pair = [term, document.createElement('dd')];
      list.append(...pair);
      details.terms.set(key, pair);
    }
    const empty = value === null || value === undefined || value === '';
    pair[0].hidden = empty;
    pair[1].hidden = empty;
    pair[1].textContent = empty ? '' : String(value);
  }
}

/** Expands the selected row, or steps into it when it is expanded. */
function open() {
  const tree = state.tree;
  const { parent, index, item } = tree.locate(state.selected);
  if (item) return select(state.selected + 1);
  tree.expand(parent, index).catch(fail);
}

/** Collapses the selected row, or goes to its parent. */
function close() {
  const tree = state.tree;
  const { parent, item } = tree.locate(state.selected);
  if (item) return tree.collapse(item);
  if (parent.parent) select(tree.flatIndex(parent.parent, parent.index));
}

function toggleAt(i) {
  const tree = state.tree;
  const { parent, index, item } = tree.locate(i);
  if (item) {
    const hidden = item.open;
    if (state.selected > i) state.selected = state.selected <= i + hidden ? i : state.selected - hidden;
    tree.collapse(item);
  } else {
    const before = tree.count;
    tree.expand(parent, index).catch(fail);
    if (state.selected > i) state.selected += tree.count - before;
  }
  select(state.selected, false);
}

function bindKeys() {
  const element = $('tree');
  element.addEventListener('keydown', (event) => {
    if (!state.tree || event.ctrlKey || event.metaKey || event.altKey) return;
    const page = state.list.visibleRows;
    const last = state.tree.count - 1;
    const keys = {
      ArrowUp: () => select(state.selected - 1), k: () => select(state.selected - 1),
      ArrowDown: () => select(state.selected + 1), j: () => select(state.selected + 1),
      PageUp: () => select(state.selected - page), PageDown: () => select(state.selected + page),
      Home: () => select(0), g: () => select(0), End: () => select(last), G: () => select(last),
      Enter: open, ArrowRight: open, l: open, ArrowLeft: close, h: close,
      '/': () => $('search').focus(),
      n: () => stepHit(1), N: () => stepHit(-1),
      t: () => $('thread').focus(),
      f: () => openFlame().catch(fail),
      ']': () => stepChange(1).catch(fail), '[': () => stepChange(-1).catch(fail),
    };
    const action = keys[event.key];
    if (!action) return;
    event.preventDefault();
    action();
  });
  element.addEventListener('click', (event) => {
    const row = event.target.closest('.row');
    if (!row) return;
    const i = Number(row.dataset.index);
    if (event.target.classList.contains('toggle')) toggleAt(i);
    else select(i, false);
    element.focus();
  });
  element.addEventListener('dblclick', (event) => {
    const row = event.target.closest('.row');
    if (row && !event.target.classList.contains('toggle')) toggleAt(Number(row.dataset.index));
  });
}

function bindFlame() {
  state.flame = new FlameView($('flame-pane'), state.rpc, fail, (path) => {
    const scope = state.flame.scope;
    if (scope) writeHash(scope.node ?? null, scope.link, path);
  });
  $('flame-open').addEventListener('click', () => openFlame().catch(fail));
  $('flame-close').addEventListener('click', closeFlame);
  $('flame-pane').addEventListener('keydown', (event) => {
    if (event.key === 'Escape') closeFlame();
    if (event.key === 's') $('flame-sandwich').click();
  });
}

/** The flame graph of `scope` (by default the selected node's; the
 * selected thread's row's, or the thread chosen's, or every thread's),
 * zoomed into `zoom` (a path of names) when given; the URL names it. */
async function openFlame(scope = null, zoom = null) {
  if (!state.trace) return;
  if (!scope) {
    const row = state.tree?.row(state.selected);
    const chosen = $('thread').value;
    if (row && row.kind !== 'thread') {
      scope = { trace: state.trace, node: row.handle, title: row.text, link: '1' };
    } else if (row && row.kind === 'thread') {
      scope = { trace: state.trace, thread: row.thread, title: `thread ${row.thread + 1}`, link: `thread:${row.thread}` };
    } else if (chosen !== 'all') {
      scope = { trace: state.trace, thread: Number(chosen), title: `thread ${Number(chosen) + 1}`, link: `thread:${chosen}` };
    } else {
      scope = { trace: state.trace, title: 'every thread', link: 'all' };
    }
  }
  writeHash(scope.node ?? null, scope.link, zoom);
  $('tree-pane').hidden = true;
  $('flame-pane').hidden = false;
  $('flame-pane').tabIndex = 0;
  $('flame-pane').focus();
  await state.flame.show(scope, zoom);
}

function closeFlame() {
  $('flame-pane').hidden = true;
  state.flame.release();
  $('tree-pane').hidden = false;
  const row = state.tree?.row(state.selected);
  writeHash(row && row.kind !== 'thread' ? row.handle : null);
  $('tree').focus();
}

/** Selects node `handle`, expanding its ancestors. */
async function goTo(handle) {
  // Only the latest of overlapping jumps (keys pressed quickly) selects.
  const jump = ++state.jumps;
  status(`going to ${handle}…`);
  const row = await state.tree.reveal(handle);
  if (jump !== state.jumps) return;
  if (row < 0) throw new Error(`node ${handle} could not be shown`);
  select(row);
  status(`${state.name} · node ${handle}`);
}

const CHANGES = ['added', 'removed', 'edited'];

/** Selects the next (`step` 1) or previous (-1) change of a diff trace
 * after or before the selected row: in its thread, then from the start
 * (the end) of each thread shown after (before) it. */
async function stepChange(step) {
  if (!state.trace) return;
  const row = state.tree.row(state.selected);
  if (!row) return;
  const thread = row.kind === 'thread' ? row.thread : Number(row.handle.split(':')[0]);
  const asks = [];
  if (row.kind !== 'thread') asks.push({ from: row.handle });
  else if (step > 0) asks.push({ thread });
  const chosen = $('thread').value;
  const shown = state.threads.filter((t) => chosen === 'all' || String(t.id) === chosen);
  const ids = shown.map((t) => t.id).filter((id) => (step > 0 ? id > thread : id < thread));
  if (step < 0) ids.reverse();
  for (const id of ids) asks.push({ thread: id });
  const method = step > 0 ? 'trace/findNext' : 'trace/findPrevious';
  for (const ask of asks) {
    const { hit } = await state.rpc.call(method, { trace: state.trace, diff: CHANGES, ...ask });
    if (hit) {
      await goTo(hit.handle);
      return;
    }
  }
  status(step > 0 ? 'no change after this row' : 'no change before this row');
}

function clearHits() {
  state.hits = [];
  state.hit = -1;
  state.hitHandles = new Set();
  $('hits').replaceChildren();
  $('hits-head').textContent = '';
}

function bindSearch() {
  $('search-form').addEventListener('submit', (event) => {
    event.preventDefault();
    search().catch(fail);
  });
  $('search').addEventListener('keydown', (event) => {
    if (event.key === 'Escape') $('tree').focus();
  });
  $('search-next').addEventListener('click', () => stepHit(1));
  $('search-prev').addEventListener('click', () => stepHit(-1));
  $('search-cancel').addEventListener('click', () => {
    if (state.search) state.rpc.cancel(state.search).catch(fail);
  });
  $('hits').addEventListener('click', (event) => {
    const item = event.target.closest('li');
    if (item) showHit(Number(item.dataset.hit));
  });
}

async function search() {
  const pattern = $('search').value;
  if (!pattern || !state.trace) return;
  if (state.search) await state.rpc.cancel(state.search);
  clearHits();
  const list = $('hits');
  const chosen = $('thread').value;
  const progress = state.rpc.token_for((value) => {
    if (value.kind === 'report') $('hits-head').textContent = `searching: ${value.message}`;
  });
  const partial = state.rpc.token_for((value) => {
    for (const hit of value.hits ?? []) {
      const at = state.hits.length;
      state.hits.push(hit);
      state.hitHandles.add(hit.handle);
      const item = document.createElement('li');
      item.dataset.hit = at;
      item.dataset.handle = hit.handle;
      const path = document.createElement('span');
      path.className = 'path';
      path.textContent = `thread ${hit.thread + 1}: ${hit.path.join(' › ') || '(top level)'}`;
      item.append(document.createTextNode(hit.text), path);
      list.append(item);
    }
    state.list.schedule();
  });
  const params = {
    trace: state.trace, pattern, text: $('search-text').checked, ignoreCase: $('search-case').checked,
    max: 1000, workDoneToken: progress, partialResultToken: partial,
  };
  if (chosen !== 'all') params.threads = [Number(chosen)];
  const { id, result } = state.rpc.start('trace/search', params);
  state.search = id;
  $('search-cancel').hidden = false;
  $('hits-head').textContent = 'searching…';
  try {
    const found = await result;
    const shown = state.hits.length < found.total ? ` (the first ${state.hits.length} listed)` : '';
    $('hits-head').textContent = `${found.total} hits${shown}`;
    if (state.hits.length) showHit(0);
  } catch (error) {
    $('hits-head').textContent = error.code === CANCELLED
      ? `cancelled: ${state.hits.length} hits so far`
      : `search failed: ${error.message}`;
    if (error.code !== CANCELLED) throw error;
  } finally {
    if (state.search === id) state.search = null;
    $('search-cancel').hidden = true;
    state.rpc.forget(progress);
    state.rpc.forget(partial);
  }
}

function stepHit(step) {
  if (state.hits.length === 0) return;
  const next = (state.hit + step + state.hits.length) % state.hits.length;
  showHit(next);
}

function showHit(at) {
  state.hit = at;
  for (const item of $('hits').children) item.classList.toggle('current', Number(item.dataset.hit) === at);
  $('hits').children[at]?.scrollIntoView({ block: 'nearest' });
  const hit = state.hits[at];
  $('hits-head').dataset.current = String(at);
  goTo(hit.handle).catch(fail);
}

main().catch(fail);
