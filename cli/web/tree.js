// The open part of a trace's tree as flat rows, for a virtualized list.
//
// The tree is held as the items the user expanded, each with the number of
// its children (`total`) and, in `extra`, the rows its expanded children
// show below themselves; a child's row is fetched with its page (PAGE rows
// of `trace/children` or `trace/roots`) when it is about to be shown, and
// pages far from the view are dropped (at most MAX_PAGES kept). So a call
// with millions of children costs what is on screen, and row i is found by
// walking the expanded items only. Collapsing an item forgets its subtree.
//
// Threads are the top rows (`# Thread N (name)`, as `print` heads them),
// their roots below them: expanded fully, the rows are `print --verbose`'s
// lines.

export const PAGE = 200;
const MAX_PAGES = 400;

export class Item {
  constructor(parent, index, row) {
    this.parent = parent;
    this.index = index;
    this.row = row;
    this.expanded = false;
    this.total = 0;
    this.exact = true;
    this.extra = 0;
    this.pages = new Map();
    this.kids = new Map();
    this.order = null;
  }

  /** Rows shown below this item. */
  get open() {
    return this.expanded ? this.total + this.extra : 0;
  }

  /** Expanded children by index, ascending. */
  sortedKids() {
    if (!this.order) this.order = [...this.kids.values()].sort((a, b) => a.index - b.index);
    return this.order;
  }
}

export class Tree {
  constructor(rpc, trace, threads, onChange) {
    this.rpc = rpc;
    this.trace = trace;
    this.onChange = onChange;
    this.root = new Item(null, 0, null);
    this.root.expanded = true;
    this.inFlight = new Map();
    this.lru = new Map();
    this.setThreads(threads);
  }

  /** Shows `threads` (`{id, name, roots}`) as the top rows. */
  setThreads(threads) {
    const root = this.root;
    root.kids.clear();
    root.order = null;
    root.extra = 0;
    root.total = threads.length;
    root.pages = new Map([[0, threads.map((t) => ({
      thread: t.id,
      handle: `thread:${t.id}`,
      kind: 'thread',
      depth: -1,
      text: `# Thread ${t.id + 1} (${t.name})`,
      childCount: t.roots,
      childCountExact: true,
      hasChildren: t.roots > 0,
    }))]]);
    this.onChange();
  }

  /** A followed trace grew: the threads' root counts are updated and every
   * expanded item's pages asked again (calls not finished yet have more
   * children), keeping what is expanded. False when the threads changed,
   * for the caller to start over with setThreads. */
  refresh(threads) {
    const shown = this.root.pages.get(0) ?? [];
    const now = threads.filter((t) => shown.some((row) => row.thread === t.id));
    if (now.length !== shown.length) return false;
    now.forEach((thread, at) => {
      const row = shown[at];
      if (row.thread !== thread.id) return;
      row.childCount = thread.roots;
      row.hasChildren = thread.roots > 0;
      const item = this.root.kids.get(at);
      if (item) {
        this.grow(item, thread.roots - item.total);
        item.total = thread.roots;
      }
    });
    const again = (item) => {
      for (const kid of item.kids.values()) {
        kid.pages.clear();
        this.lru.delete(kid);
        this.inFlight.delete(kid);
        if (kid.row.kind !== 'thread') this.countChildren(kid);
        again(kid);
      }
    };
    again(this.root);
    this.onChange();
    return true;
  }

  get count() {
    return this.root.open;
  }

  /** Where flat row `i` is: its parent item, its index there, and the item
   * when it is expanded. */
  locate(i) {
    let item = this.root;
    outer: for (;;) {
      let skip = 0;
      for (const kid of item.sortedKids()) {
        const at = kid.index + skip;
        if (i < at) break;
        if (i === at) return { parent: item, index: kid.index, item: kid };
        if (i <= at + kid.open) {
          item = kid;
          i -= at + 1;
          continue outer;
        }
        skip += kid.open;
      }
      const index = i - skip;
      return { parent: item, index, item: item.kids.get(index) };
    }
  }

  /** The flat row of child `index` of `parent`, or -1 when not shown. */
  flatIndex(parent, index) {
    let row = 0;
    let item = parent;
    let at = index;
    while (item) {
      if (!item.expanded) return -1;
      for (const kid of item.sortedKids()) {
        if (kid.index >= at) break;
        row += kid.open;
      }
      row += at;
      if (!item.parent) return row;
      row += 1;
      at = item.index;
      item = item.parent;
    }
    return -1;
  }

  /** Row `i`'s data, or null while its page loads (then fetched). */
  row(i) {
    const { parent, index } = this.locate(i);
    return this.rowOf(parent, index);
  }

  rowOf(parent, index) {
    const page = Math.floor(index / PAGE);
    const rows = parent.pages.get(page);
    if (rows) {
      this.touch(parent, page);
      const row = rows[index - page * PAGE];
      if (row) return row;
      if (index < parent.total) return null;
    }
    if (index < parent.total) this.fetch(parent, page);
    return null;
  }

  touch(parent, page) {
    if (parent === this.root) return;
    const key = parent;
    let pages = this.lru.get(key);
    if (!pages) return;
    this.lru.delete(key);
    this.lru.set(key, pages);
    pages.add(page);
  }

  /** Fetches page `page` of `parent`'s children (once at a time). */
  fetch(parent, page) {
    let loading = this.inFlight.get(parent);
    if (!loading) {
      loading = new Map();
      this.inFlight.set(parent, loading);
    }
    const known = loading.get(page);
    if (known) return known;
    const start = page * PAGE;
    const thread = parent.row.kind === 'thread';
    const params = thread
      ? { trace: this.trace, thread: parent.row.thread, start, count: PAGE }
      : { trace: this.trace, node: parent.row.handle, start, count: PAGE };
    const promise = this.rpc.call(thread ? 'trace/roots' : 'trace/children', params).then((result) => {
      loading.delete(page);
      if (!parent.expanded) return;
      parent.pages.set(page, result.nodes);
      this.remember(parent, page);
      this.resize(parent, start, result);
      this.onChange();
    }, (error) => {
      loading.delete(page);
      this.onChange(error);
    });
    loading.set(page, promise);
    return promise;
  }

  /** Keeps at most MAX_PAGES pages, dropping the least recently shown. */
  remember(parent, page) {
    let pages = this.lru.get(parent);
    if (!pages) {
      pages = new Set();
      this.lru.set(parent, pages);
    }
    pages.add(page);
    let held = 0;
    for (const set of this.lru.values()) held += set.size;
    for (const [item, set] of this.lru) {
      if (held <= MAX_PAGES) break;
      if (item === parent) continue;
      for (const p of set) {
        item.pages.delete(p);
        held--;
      }
      this.lru.delete(item);
    }
  }

  /** A page's answer tells more about the number of children. */
  resize(parent, start, result) {
    const before = parent.total;
    if (result.total !== undefined && result.total !== null) {
      parent.total = result.total;
      parent.exact = true;
    } else if (result.nodes.length < PAGE) {
      parent.total = start + result.nodes.length;
      parent.exact = true;
    } else if (start + PAGE >= parent.total) {
      // More than counted so far: one row more to ask for the rest.
      parent.total = start + PAGE + 1;
    }
    this.grow(parent, parent.total - before);
  }

  grow(item, delta) {
    if (delta === 0) return;
    for (let p = item.parent; p; p = p.parent) {
      p.extra += delta;
      if (!p.expanded) break;
    }
  }

  /** Expands child `index` of `parent` (whose row is known); resolves when
   * its first page is in. */
  async expand(parent, index) {
    let row = this.rowOf(parent, index);
    if (!row && index < parent.total) {
      // Asked before its row came (keys typed ahead): once it is in.
      await this.fetch(parent, Math.floor(index / PAGE));
      row = parent.expanded ? this.rowOf(parent, index) : null;
    }
    if (!row || !row.hasChildren) return null;
    let item = parent.kids.get(index);
    if (item && item.expanded) return item;
    item = new Item(parent, index, row);
    item.expanded = true;
    item.total = Math.max(row.childCount, 1);
    item.exact = row.childCountExact;
    parent.kids.set(index, item);
    parent.order = null;
    this.grow(item, item.total);
    this.onChange();
    if (!item.exact) this.countChildren(item);
    await this.fetch(item, 0);
    return item;
  }

  /** Counts the children of a call with more than a page of them: a page
   * past the first makes the server scan the call once and answer its
   * total (the terminal viewer counts on a thread of its own). */
  countChildren(item) {
    const params = { trace: this.trace, node: item.row.handle, start: Math.max(item.row.childCount, item.total), count: 1 };
    this.rpc.call('trace/children', params).then((result) => {
      if (!item.expanded || result.total === undefined || result.total === null) return;
      const before = item.total;
      item.total = result.total;
      item.exact = true;
      this.grow(item, item.total - before);
      this.onChange();
    }, (error) => this.onChange(error));
  }

  /** Collapses `item`, forgetting its subtree. */
  collapse(item) {
    if (!item || item === this.root || !item.expanded) return;
    const shown = item.open;
    item.expanded = false;
    this.forget(item);
    item.parent.kids.delete(item.index);
    item.parent.order = null;
    for (let p = item.parent; p; p = p.parent) {
      p.extra -= shown;
      if (!p.expanded) break;
    }
    this.onChange();
  }

  forget(item) {
    for (const kid of item.kids.values()) this.forget(kid);
    item.kids.clear();
    item.pages.clear();
    this.lru.delete(item);
    this.inFlight.delete(item);
  }

  /** The depth of row `i` (threads -1, roots 0). */
  depthOf(i) {
    let depth = -1;
    const { parent } = this.locate(i);
    for (let p = parent; p && p.parent; p = p.parent) depth++;
    return depth;
  }

  /** Expands the way to node `handle`: its thread, its ancestors; returns
   * its flat row. */
  async reveal(handle) {
    const thread = Number(handle.split(':')[0]);
    const threads = this.root.pages.get(0);
    const threadIndex = threads.findIndex((t) => t.thread === thread);
    if (threadIndex < 0) throw new Error(`thread ${thread} is not shown (thread filter)`);
    const { nodes } = await this.rpc.call('trace/ancestors', { trace: this.trace, node: handle });
    const chain = [...nodes.map((n) => n.handle), handle];
    const positions = await Promise.all(chain.map((node) =>
      this.rpc.call('trace/position', { trace: this.trace, node })));
    let item = await this.expand(this.root, threadIndex);
    for (let depth = 0; depth < chain.length; depth++) {
      const index = positions[depth].index;
      const page = Math.floor(index / PAGE);
      if (!item.pages.has(page)) await this.fetch(item, page);
      if (depth === chain.length - 1) return this.flatIndex(item, index);
      const next = await this.expand(item, index);
      if (!next) throw new Error(`node ${chain[depth]} has no children`);
      item = next;
    }
    return -1;
  }
}
