// A virtualized list: only the rows in view are in the DOM. A spacer gives
// the scroll bar its length; past what a browser can lay out (MAX_HEIGHT
// pixels) the scroll position maps to rows proportionally, so ten million
// rows scroll as well as ten.

const MAX_HEIGHT = 4_000_000;

export class VirtualList {
  constructor(element, rowHeight, renderRow) {
    this.element = element;
    this.rowHeight = rowHeight;
    this.renderRow = renderRow;
    this.count = 0;
    this.layer = document.createElement('div');
    this.layer.className = 'layer';
    this.spacer = document.createElement('div');
    this.spacer.className = 'spacer';
    element.append(this.layer, this.spacer);
    this.pool = [];
    this.scheduled = false;
    element.addEventListener('scroll', () => this.schedule(), { passive: true });
    new ResizeObserver(() => this.schedule()).observe(element);
  }

  setCount(count) {
    this.count = count;
    this.spacer.style.height = `${Math.min(count * this.rowHeight, MAX_HEIGHT)}px`;
    this.schedule();
  }

  /** Rows that fit in the view. */
  get visibleRows() {
    return Math.max(1, Math.floor(this.element.clientHeight / this.rowHeight));
  }

  /** The first row in view, and the pixel offset of rows from the top. */
  window() {
    const height = this.element.clientHeight;
    const natural = this.count * this.rowHeight;
    const top = this.element.scrollTop;
    if (natural <= MAX_HEIGHT) {
      const first = Math.floor(top / this.rowHeight);
      return { first, offset: -(top - first * this.rowHeight) };
    }
    const range = Math.max(1, MAX_HEIGHT - height);
    const rows = Math.max(0, this.count - Math.floor(height / this.rowHeight));
    const first = Math.min(rows, Math.round((top / range) * rows));
    return { first, offset: 0 };
  }

  /** Scrolls so that row `i` is in view. */
  reveal(i) {
    const { first } = this.window();
    const shown = this.visibleRows;
    if (i >= first && i < first + shown) return;
    const target = i < first ? i : i - shown + 1;
    const natural = this.count * this.rowHeight;
    if (natural <= MAX_HEIGHT) {
      this.element.scrollTop = target * this.rowHeight;
    } else {
      const rows = Math.max(1, this.count - shown);
      const range = MAX_HEIGHT - this.element.clientHeight;
      this.element.scrollTop = Math.ceil((Math.max(0, target) / rows) * range);
    }
    this.schedule();
  }

  schedule() {
    if (this.scheduled) return;
    this.scheduled = true;
    requestAnimationFrame(() => {
      this.scheduled = false;
      this.render();
    });
  }

  /** Draws the rows in view now. */
  render() {
    const { first, offset } = this.window();
    const shown = Math.min(this.count - first, this.visibleRows + 2);
    while (this.pool.length < shown) {
      const row = document.createElement('div');
      row.className = 'row';
      this.layer.append(row);
      this.pool.push(row);
    }
    while (this.pool.length > Math.max(shown, 0)) this.pool.pop().remove();
    for (let k = 0; k < shown; k++) {
      const element = this.pool[k];
      element.style.top = `${offset + k * this.rowHeight}px`;
      this.renderRow(first + k, element);
    }
  }
}
