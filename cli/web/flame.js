// The flame graph (icicle) of a node, a thread or the whole trace, and the
// sandwich of one frame: the engine walks the trace (`trace/flame`,
// `trace/sandwich`) and sends only frames at least a pixel wide, with
// what it left out as each frame's `other`; the page lays them out.
//
// A frame is a div placed by its weights: its width is its total over the
// total in view, its children start at its left edge, widest first, and
// what remains to their right is its own weight and `other`. Clicking a
// frame zooms into it (its ancestors span the view, dimmed) from the
// summary when it holds every frame a pixel wide at the new scale (what it
// left out under the frame is narrower, or nothing was), else the engine
// walks the calls on the frame's path only (`path`) for the finer frames,
// which replace the frame's subtree in the summary; the sandwich of the
// selected frame shows its callers above it (an inverted graph, growing
// upward) and its callees below.

const ROW = 18;
/** Frames the page asks for, at most. */
const MAX_FRAMES = 20000;
/** Frames drawn at most in one view (the widest: the summary is in pre-order). */
const MAX_DRAWN = 6000;

/** A frame's colour: warm for calls, cool for loops, stable per name. */
function colour(name) {
  let hash = 0;
  for (let i = 0; i < name.length; i++) hash = (hash * 31 + name.charCodeAt(i)) | 0;
  const shift = ((hash >>> 0) % 1000) / 1000;
  if (name === 'loop' || name === 'loop_iteration') return `hsl(${190 + shift * 30}, 55%, ${70 + shift * 10}%)`;
  return `hsl(${10 + shift * 45}, ${70 + shift * 20}%, ${58 + shift * 12}%)`;
}

/** `frames` (pre-order, parents by index) with each one's left edge in
 * weight units and its path of names. */
function layout(frames) {
  const next = new Float64Array(frames.length); // each frame's next child's left edge
  const placed = frames.map((frame, i) => {
    const parent = frame.parent === null ? null : frame.parent;
    const x = parent === null ? 0 : next[parent];
    if (parent !== null) next[parent] += frame.total;
    next[i] = x;
    return { ...frame, index: i, x };
  });
  for (const frame of placed) {
    frame.path = frame.parent === null ? [frame.name] : [...placed[frame.parent].path, frame.name];
  }
  return placed;
}

/** The key of a path, to find a frame again in a finer summary. */
const pathKey = (path) => path.join('\u0001');

/** `result`'s frames, each told its summary's threshold and whether that
 * summary was cut short (by the bound on frames or on paths). */
function told(result) {
  const capped = result.truncated || result.frames.length >= MAX_FRAMES;
  return result.frames.map((frame) => ({ ...frame, threshold: result.threshold, capped }));
}

/** `frames` (pre-order) with the subtree of the frame at `at` replaced by
 * `zoomed`'s frames (a `trace/flame` result rooted at that frame). */
function splice(frames, at, zoomed) {
  const top = frames[at];
  let end = at + 1;
  while (end < frames.length && frames[end].depth > top.depth) end++;
  const shift = zoomed.frames.length - (end - at);
  const inside = told(zoomed).map((frame, i) => ({
    ...frame,
    name: i === 0 ? top.name : frame.name,
    depth: frame.depth + top.depth,
    parent: i === 0 ? top.parent : frame.parent + at,
  }));
  const after = frames.slice(end).map((frame) => (
    frame.parent !== null && frame.parent >= end ? { ...frame, parent: frame.parent + shift } : frame));
  return [...frames.slice(0, at), ...inside, ...after];
}

/** One graph drawn into an element: an icicle (root on top) or, for
 * callers, an inverted one (root at the bottom). */
class Graph {
  constructor(element, { inverted = false, onSelect, onHover }) {
    this.element = element;
    this.inverted = inverted;
    this.onSelect = onSelect;
    this.onHover = onHover;
    this.frames = [];
    this.zoom = 0;
    element.addEventListener('click', (event) => {
      const div = event.target.closest('.frame');
      if (div) this.onSelect(this.frames[Number(div.dataset.index)]);
    });
    element.addEventListener('mousemove', (event) => {
      const div = event.target.closest('.frame');
      this.onHover(div ? this.frames[Number(div.dataset.index)] : null);
    });
    element.addEventListener('mouseleave', () => this.onHover(null));
    new ResizeObserver(() => this.draw()).observe(element);
  }

  /** Shows `frames` (a `trace/flame` result's, or several spliced, each
   * [`told`] its summary's bounds), zoomed into the frame at `path` when it
   * has one. */
  set(frames, path = null) {
    this.frames = layout(frames);
    this.zoomTo(path);
  }

  /** Zooms into the frame at `path` (the root when absent). */
  zoomTo(path) {
    const key = path ? pathKey(path) : null;
    const found = key === null ? null : this.frames.find((f) => pathKey(f.path) === key);
    this.zoom = found ? found.index : 0;
    this.draw();
    return Boolean(found) || key === null;
  }

  get zoomed() {
    return this.frames[this.zoom];
  }

  /** Forgets the frames and takes their elements out of the page. */
  clear() {
    this.frames = [];
    this.zoom = 0;
    this.element.replaceChildren();
    this.element.style.height = '';
    delete this.element.dataset.zoom;
    delete this.element.dataset.drawn;
  }

  draw() {
    const element = this.element;
    if (!this.frames.length) return element.replaceChildren();
    const width = element.clientWidth;
    const view = this.frames[this.zoom];
    const scale = view.total > 0 ? width / view.total : 0;
    const ancestors = new Set();
    for (let f = view; f; f = f.parent === null ? null : this.frames[f.parent]) ancestors.add(f.index);
    const depth = this.frames.reduce((most, f) => Math.max(most, f.depth), 0);
    element.style.height = `${(depth + 1) * ROW + 2}px`;
    const fragment = document.createDocumentFragment();
    let drawn = 0;
    for (const frame of this.frames) {
      if (drawn >= MAX_DRAWN) break;
      let left;
      let pixels;
      if (ancestors.has(frame.index)) {
        left = 0;
        pixels = width;
      } else {
        if (frame.depth <= view.depth) continue;
        // Inside the zoomed frame only.
        if (frame.x < view.x || frame.x + frame.total > view.x + view.total) continue;
        left = (frame.x - view.x) * scale;
        pixels = frame.total * scale;
        if (pixels < 1) continue;
      }
      const div = document.createElement('div');
      div.className = ancestors.has(frame.index) && frame.index !== view.index ? 'frame above' : 'frame';
      div.dataset.index = frame.index;
      div.dataset.name = frame.name;
      div.dataset.total = frame.total;
      div.dataset.self = frame.self;
      div.dataset.other = frame.other;
      div.dataset.threshold = frame.threshold;
      div.dataset.depth = frame.depth;
      div.dataset.path = JSON.stringify(frame.path);
      div.style.left = `${left}px`;
      div.style.width = `${pixels}px`;
      const top = this.inverted ? depth - frame.depth : frame.depth;
      div.style.top = `${top * ROW}px`;
      div.style.background = colour(frame.name);
      if (pixels > 28) div.textContent = frame.name;
      div.title = `${frame.name}\n${frame.total} tracepoints, ${frame.self} own`;
      fragment.append(div);
      drawn++;
    }
    element.replaceChildren(fragment);
    element.dataset.zoom = this.zoom;
    element.dataset.drawn = drawn;
  }
}

export class FlameView {
  /** `pane` holds the view; `rpc` the service; `fail` reports errors. */
  /** `onZoom(path)` hears of each frame zoomed into (for links). */
  constructor(pane, rpc, fail, onZoom = () => {}) {
    this.pane = pane;
    this.onZoom = onZoom;
    this.rpc = rpc;
    this.fail = fail;
    this.scope = null;
    this.request = null;
    this.selected = null;
    // Counts the graphs shown and released: an answer to an older one is
    // not drawn.
    this.generation = 0;
    this.head = pane.querySelector('.flame-head');
    this.info = pane.querySelector('.flame-info');
    const hover = (frame) => this.describe(frame ?? this.selected);
    this.graph = new Graph(pane.querySelector('#flame'), {
      onSelect: (frame) => this.zoomInto(frame),
      onHover: hover,
    });
    this.callers = new Graph(pane.querySelector('#callers'), {
      inverted: true,
      onSelect: (frame) => this.describe(frame),
      onHover: hover,
    });
    this.callees = new Graph(pane.querySelector('#callees'), {
      onSelect: (frame) => this.describe(frame),
      onHover: hover,
    });
    pane.querySelector('#flame-reset').addEventListener('click', () => this.zoomInto(this.graph.frames[0]));
    pane.querySelector('#flame-sandwich').addEventListener('click', () => {
      const frame = this.graph.zoomed;
      if (frame && frame.depth > 0) this.sandwich(frame.name).catch(fail);
    });
    pane.querySelector('#flame-cancel').addEventListener('click', () => {
      if (this.request) this.rpc.cancel(this.request).catch(fail);
    });
  }

  /** The flame graph of `scope`: `{trace, node?, thread?, title}`,
   * zoomed into the frame at `path` (names from the root) when given. */
  async show(scope, path = null) {
    const generation = ++this.generation;
    this.scope = scope;
    this.pane.querySelector('#sandwich').hidden = true;
    this.head.textContent = `flame graph of ${scope.title}`;
    const result = await this.fetch('trace/flame', this.params(1 / this.width()));
    if (!result || generation !== this.generation) return;
    this.graph.set(told(result));
    this.selected = this.graph.zoomed;
    this.describe(this.selected);
    // Down to the frame through those the summaries hold on its path,
    // each zoom finer than the last.
    let reached = 1;
    while (path && path.length > reached && generation === this.generation) {
      const frame = this.onPath(path);
      if (!frame || frame.path.length <= reached) break;
      reached = frame.path.length;
      await this.zoomInto(frame);
    }
  }

  /** The deepest frame of the graph on `path` (names from the root). */
  onPath(path) {
    const key = pathKey(path);
    let deepest = null;
    for (const frame of this.graph.frames) {
      const at = pathKey(frame.path);
      if ((key === at || key.startsWith(`${at}\u0001`)) && (!deepest || frame.depth > deepest.depth)) deepest = frame;
    }
    return deepest;
  }

  width() {
    return Math.max(100, this.pane.querySelector('#flame').clientWidth || this.pane.clientWidth || 1000);
  }

  params(minFraction) {
    const params = { trace: this.scope.trace, minFraction: Math.min(1, minFraction), maxFrames: MAX_FRAMES };
    if (this.scope.node) params.node = this.scope.node;
    if (this.scope.thread !== undefined && this.scope.thread !== null) params.thread = this.scope.thread;
    return params;
  }

  /** A request with progress and cancel; `null` when cancelled. */
  async fetch(method, params) {
    if (this.request) await this.rpc.cancel(this.request).catch(() => {});
    const cancel = this.pane.querySelector('#flame-cancel');
    const token = this.rpc.token_for((value) => {
      if (value.kind === 'report') this.info.textContent = `${method}: ${value.message}`;
    });
    const { id, result } = this.rpc.start(method, { ...params, workDoneToken: token });
    this.request = id;
    cancel.hidden = false;
    this.pane.dataset.busy = 'true';
    this.info.textContent = `${method}…`;
    try {
      return await result;
    } catch (error) {
      if (error.code === -32800) {
        this.info.textContent = 'cancelled';
        return null;
      }
      throw error;
    } finally {
      this.rpc.forget(token);
      if (this.request === id) {
        this.request = null;
        cancel.hidden = true;
        delete this.pane.dataset.busy;
      }
    }
  }

  /** Whether the summary holds every frame under `frame` a pixel wide
   * once `frame` spans the view: nothing was left out for the bound on
   * frames, and what was left out under it (`other`, each under the
   * summary's threshold) is under a pixel at the new scale, or nothing
   * was. (Below a frame, no summary spliced in is coarser than its own.) */
  resolves(frame) {
    if (frame.capped) return false;
    if ((frame.threshold - 1) * this.width() < frame.total) return true;
    const key = pathKey(frame.path);
    return !this.graph.frames.some((f) => f.other > 0
      && (f.index === frame.index || pathKey(f.path).startsWith(`${key}\u0001`)));
  }

  /** Zooms into `frame`: from the summary when it resolves the frame,
   * else the engine walks the calls on its path for the frames a pixel
   * wide at the new scale, and they replace its subtree. Says which on the
   * pane (`data-zoomed-from`). */
  async zoomInto(frame) {
    this.selected = frame;
    const path = frame.path;
    this.graph.zoomTo(path);
    this.describe(frame);
    this.onZoom(path);
    const root = this.graph.frames[0];
    if (!root || frame.total === 0 || this.resolves(frame)) {
      this.pane.dataset.zoomedFrom = 'summary';
      return;
    }
    this.pane.dataset.zoomedFrom = 'walk';
    try {
      const params = { ...this.params(1 / this.width()), path: path.slice(1) };
      const result = await this.fetch('trace/flame', params);
      if (!result || this.selected !== frame) return;
      this.graph.set(splice(this.graph.frames, frame.index, result), path);
      this.selected = this.graph.zoomed;
      this.describe(this.selected);
    } catch (error) {
      this.fail(error);
    }
  }

  /** The sandwich of the frame `name`: its callers above, callees below. */
  async sandwich(name) {
    const generation = this.generation;
    const result = await this.fetch('trace/sandwich', { ...this.params(1 / this.width()), method: name });
    if (!result || generation !== this.generation) return;
    this.pane.querySelector('#sandwich').hidden = false;
    this.pane.querySelector('#sandwich-head').textContent = `sandwich of ${name}: callers above, callees below`;
    this.callers.set(told(result.callers));
    this.callees.set(told(result.callees));
    this.describe(this.callees.frames[0]);
  }

  /** Takes the graphs out of the page while the view is closed (a walk
   * under way is cancelled): it is drawn again when shown again. */
  release() {
    this.generation++;
    if (this.request) this.rpc.cancel(this.request).catch(() => {});
    this.selected = null;
    this.scope = null;
    for (const graph of [this.graph, this.callers, this.callees]) graph.clear();
    this.pane.querySelector('#sandwich').hidden = true;
    this.info.textContent = '';
  }

  describe(frame) {
    if (!frame) return;
    const root = this.graph.frames[0];
    const share = root && root.total ? ` (${((100 * frame.total) / root.total).toFixed(2)}% of ${root.name})` : '';
    this.info.textContent = `${frame.name}: ${frame.total} tracepoints${share}, ${frame.self} own`;
  }
}
