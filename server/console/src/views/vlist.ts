// A windowed list of a session's events, numbered 1..count without gaps
// (the store's sequence): only the rows in view, and a margin, are in the
// page. Each row's height is measured once it is drawn and estimated
// until then; a Fenwick tree of the heights finds a row's offset and the
// row at an offset in O(log n), so a 100,000-event session costs what a
// screenful does. The list keeps what one looks at in place while rows
// are measured, loaded or added: the first row in view is the anchor,
// and the scroll position follows it.

class Fenwick {
  t = new Float64Array(1);
  h = new Float64Array(1);
  n = 0;

  grow(n: number, est: number): void {
    if (n <= this.n) return;
    if (n + 1 > this.t.length) {
      const old = this.h;
      let cap = this.t.length;
      while (cap < n + 1) cap *= 2;
      this.t = new Float64Array(cap);
      this.h = new Float64Array(cap);
      this.h.set(old.subarray(0, this.n + 1));
      const keep = this.n;
      this.n = 0;
      for (let i = 1; i <= keep; i++) this.add(i, this.h[i]);
      this.n = keep;
    }
    for (let i = this.n + 1; i <= n; i++) {
      this.h[i] = est;
      this.add(i, est);
    }
    this.n = n;
  }

  // add works on the tree's whole capacity, so that growing keeps it
  // consistent without a rebuild.
  private add(i: number, d: number): void {
    for (; i < this.t.length; i += i & -i) this.t[i] += d;
  }

  set(i: number, v: number): number {
    const d = v - this.h[i];
    if (d !== 0) {
      this.h[i] = v;
      this.add(i, d);
    }
    return d;
  }

  get(i: number): number {
    return this.h[i];
  }

  prefix(i: number): number {
    let s = 0;
    for (; i > 0; i -= i & -i) s += this.t[i];
    return s;
  }

  // lowerBound is the smallest i with prefix(i) >= y (n when none is).
  lowerBound(y: number): number {
    let pos = 0;
    let rest = y;
    let step = 1;
    while (step * 2 < this.t.length) step *= 2;
    for (; step > 0; step >>= 1) {
      const nx = pos + step;
      if (nx < this.t.length && this.t[nx] < rest) {
        pos = nx;
        rest -= this.t[nx];
      }
    }
    return Math.min(pos + 1, Math.max(this.n, 1));
  }
}

export type Order = "newest-first" | "oldest-first";

export type VListOpts = {
  order: Order;
  estimate: number; // px, a row's height before it is drawn
  margin?: number; // px drawn beyond each edge of the view
  // render draws event seq, or returns null when it is not loaded yet.
  render: (seq: number) => HTMLElement | null;
  // need asks for the events of [from, to] to be loaded (then refresh).
  need: (from: number, to: number) => void;
};

export class VList {
  readonly inner: HTMLElement;
  private tree = new Fenwick();
  private rows = new Map<number, HTMLElement>(); // drawn rows by seq
  private ro: ResizeObserver;
  private frame = 0;
  private gone = new AbortController();
  private scrolled = false;
  private stick = true; // at the newest end: new events stay in view
  private pin = 0; // an event scrollToSeq brought to the top, kept there until one scrolls
  count = 0;

  constructor(readonly el: HTMLElement, private o: VListOpts) {
    this.inner = document.createElement("div");
    this.inner.className = "vlist-inner";
    el.classList.add("vlist");
    el.append(this.inner);
    this.ro = new ResizeObserver((es) => {
      let changed = false;
      for (const e of es) {
        if (e.target === this.el) {
          changed = true; // the view itself grew or shrank
          continue;
        }
        const seq = Number((e.target as HTMLElement).dataset.vseq);
        if (this.rows.get(seq) === e.target) changed = this.measure(seq, e.target as HTMLElement) || changed;
      }
      if (changed) this.schedule();
    });
    this.ro.observe(el);
    const unpin = () => (this.pin = 0);
    for (const t of ["wheel", "touchstart", "mousedown"]) el.addEventListener(t, unpin, { passive: true });
    document.addEventListener("keydown", unpin, { capture: true, passive: true, signal: this.gone.signal });
    // A scroll only marks the list: its position is read in the next
    // frame's update, with the layout that reads anyway, not in the
    // handler, where the read would force one.
    el.addEventListener("scroll", () => {
      this.scrolled = true;
      this.schedule();
    }, { passive: true });
  }

  destroy(): void {
    this.gone.abort();
    this.ro.disconnect();
    cancelAnimationFrame(this.frame);
  }

  private total(): number {
    return this.tree.prefix(this.count);
  }

  top(seq: number): number {
    return this.o.order === "oldest-first" ? this.tree.prefix(seq - 1) : this.total() - this.tree.prefix(seq);
  }

  seqAt(y: number): number {
    if (this.count === 0) return 0;
    const tot = this.total();
    y = Math.min(Math.max(y, 0), Math.max(tot - 0.5, 0));
    if (this.o.order === "oldest-first") return Math.min(this.tree.lowerBound(y + 0.5), this.count);
    return Math.min(this.tree.lowerBound(tot - y - 0.0001), this.count) || 1;
  }

  private atNewestEnd(): boolean {
    const el = this.el;
    return this.o.order === "newest-first" ? el.scrollTop < 8 : el.scrollHeight - el.scrollTop - el.clientHeight < 8;
  }

  // setCount grows the list to count events (new ones at the newest
  // end). One at that end stays there; anyone else keeps their place.
  setCount(count: number): void {
    if (count <= this.count) return;
    this.syncStick();
    const anchor = this.anchor();
    this.tree.grow(count, this.o.estimate);
    this.count = count;
    this.layout(anchor);
  }

  // refresh draws again the rows of [from, to] that are in the page
  // (their events changed), or only those that waited for their event.
  refresh(from = 1, to = this.count, onlyLoading = false): void {
    for (const [seq, row] of this.rows) {
      if (seq >= from && seq <= to && (!onlyLoading || row.classList.contains("vrow-loading"))) this.fill(seq, row);
    }
    this.schedule();
  }

  // scrollToSeq brings event seq to the top of the view.
  scrollToSeq(seq: number): void {
    if (seq < 1 || seq > this.count) return;
    this.stick = false;
    this.pin = seq;
    this.el.scrollTop = this.top(seq);
    this.update();
    this.el.scrollTop = this.top(seq);
    this.update();
  }

  scrollToNewest(): void {
    this.stick = true;
    this.pin = 0;
    this.el.scrollTop = this.o.order === "newest-first" ? 0 : this.total();
    this.update();
  }

  visible(): [number, number] {
    const a = this.seqAt(this.el.scrollTop);
    const b = this.seqAt(this.el.scrollTop + this.el.clientHeight);
    return a <= b ? [a, b] : [b, a];
  }

  schedule(): void {
    if (this.frame) return;
    this.frame = requestAnimationFrame(() => {
      this.frame = 0;
      this.update();
    });
  }

  private syncStick(): void {
    if (!this.scrolled) return;
    this.scrolled = false;
    this.stick = !this.pin && this.atNewestEnd();
  }

  private anchor(): { seq: number; off: number } | undefined {
    if (this.pin) return { seq: this.pin, off: 0 };
    if (this.stick || this.count === 0) return undefined;
    const seq = this.seqAt(this.el.scrollTop);
    return { seq, off: this.top(seq) - this.el.scrollTop };
  }

  private layout(anchor: { seq: number; off: number } | undefined): void {
    this.inner.style.height = `${this.total()}px`;
    if (anchor) this.el.scrollTop = this.top(anchor.seq) - anchor.off;
    else if (this.stick) this.el.scrollTop = this.o.order === "newest-first" ? 0 : this.total();
    for (const [seq, row] of this.rows) row.style.transform = `translateY(${this.top(seq)}px)`;
  }

  private measure(seq: number, row: HTMLElement): boolean {
    const h = row.offsetHeight;
    if (!h) return false;
    return this.tree.set(seq, h) !== 0;
  }

  private fill(seq: number, row: HTMLElement): void {
    const el = this.o.render(seq);
    row.replaceChildren(el ?? placeholder(seq, this.tree.get(seq)));
    row.classList.toggle("vrow-loading", !el);
  }

  // update draws the rows in view and the margin, drops the others, and
  // asks for the events it lacks.
  update(): void {
    if (this.count === 0) {
      this.inner.style.height = "0px";
      return;
    }
    this.syncStick();
    const anchor = this.anchor();
    const m = this.o.margin ?? 600;
    const view = this.el.clientHeight || 600;
    let [a, b] = [this.seqAt(this.el.scrollTop - m), this.seqAt(this.el.scrollTop + view + m)];
    if (a > b) [a, b] = [b, a];
    for (const [seq, row] of this.rows) {
      if (seq < a || seq > b) {
        this.ro.unobserve(row);
        row.remove();
        this.rows.delete(seq);
      }
    }
    const fresh: [number, HTMLElement][] = [];
    let missing: [number, number] | undefined;
    for (let seq = a; seq <= b; seq++) {
      let row = this.rows.get(seq);
      if (!row) {
        row = document.createElement("div");
        row.className = "vrow";
        row.dataset.vseq = String(seq);
        this.fill(seq, row);
        this.rows.set(seq, row);
        this.inner.append(row);
        this.ro.observe(row);
        fresh.push([seq, row]);
      }
      if (row.classList.contains("vrow-loading")) missing = missing ? [Math.min(missing[0], seq), Math.max(missing[1], seq)] : [seq, seq];
    }
    let moved = false;
    for (const [seq, row] of fresh) moved = this.measure(seq, row) || moved;
    this.layout(anchor);
    if (moved) this.schedule(); // measured rows may leave part of the view undrawn
    this.el.dataset.top = String(this.seqAt(this.el.scrollTop)); // what is in view, for tests
    if (missing) this.o.need(missing[0], missing[1]);
  }
}

function placeholder(seq: number, height: number): HTMLElement {
  const p = document.createElement("div");
  p.className = "vrow-placeholder";
  p.style.height = `${Math.max(24, height - 8)}px`;
  p.textContent = `#${seq} …`;
  return p;
}
