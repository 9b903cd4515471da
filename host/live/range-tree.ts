/**
 * Half-open ranges `[start, end)` over byte strings (latin1 strings, one char per byte, so `<`
 * orders them like `Buffer.compare`), each carrying a value, in a treap ordered by start and
 * augmented with the largest end of each subtree. Live queries keep every subscription's read
 * ranges here so that the subscriptions a written key touches are found in O(log n + hits) rather
 * than by comparing the key with every range (`stab`). Insertion and removal cost O(log n).
 */
interface Node<T> {
  start: string;
  end: string;
  /** Breaks ties between equal starts, so that every range has its own place. */
  seq: number;
  priority: number;
  value: T;
  left: Node<T> | null;
  right: Node<T> | null;
  /** The largest `end` in this subtree. */
  maxEnd: string;
}

/** A range in a {@link RangeTree}, as `remove` takes it back. */
export interface RangeHandle {
  readonly start: string;
  readonly seq: number;
}

function before<T>(node: Node<T>, start: string, seq: number): boolean {
  return node.start < start || (node.start === start && node.seq < seq);
}

function update<T>(node: Node<T>): Node<T> {
  let max = node.end;
  if (node.left && node.left.maxEnd > max) max = node.left.maxEnd;
  if (node.right && node.right.maxEnd > max) max = node.right.maxEnd;
  node.maxEnd = max;
  return node;
}

/** Splits into the nodes ordered before (start, seq) and the others. */
function split<T>(node: Node<T> | null, start: string, seq: number): [Node<T> | null, Node<T> | null] {
  if (!node) return [null, null];
  if (before(node, start, seq)) {
    const [low, high] = split(node.right, start, seq);
    node.right = low;
    return [update(node), high];
  }
  const [low, high] = split(node.left, start, seq);
  node.left = high;
  return [low, update(node)];
}

/** Joins two treaps where every node of `low` is ordered before every node of `high`. */
function merge<T>(low: Node<T> | null, high: Node<T> | null): Node<T> | null {
  if (!low) return high;
  if (!high) return low;
  if (low.priority > high.priority) {
    low.right = merge(low.right, high);
    return update(low);
  }
  high.left = merge(low, high.left);
  return update(high);
}

function removeFrom<T>(node: Node<T> | null, start: string, seq: number): Node<T> | null {
  if (!node) return null;
  if (node.start === start && node.seq === seq) return merge(node.left, node.right);
  if (before(node, start, seq)) node.right = removeFrom(node.right, start, seq);
  else node.left = removeFrom(node.left, start, seq);
  return update(node);
}

/** A set of ranges with values, searchable by the key they contain. */
export class RangeTree<T> {
  private root: Node<T> | null = null;
  private nextSeq = 0;
  private count = 0;

  /** Ranges held. */
  get size(): number {
    return this.count;
  }

  /** Adds `[start, end)` with `value`; an empty range (`start >= end`) is kept but never found. */
  insert(start: string, end: string, value: T): RangeHandle {
    const seq = this.nextSeq++;
    const node: Node<T> = {
      start,
      end,
      seq,
      priority: Math.random(),
      value,
      left: null,
      right: null,
      maxEnd: end,
    };
    const [low, high] = split(this.root, start, seq);
    this.root = merge(merge(low, node), high);
    this.count++;
    return { start, seq };
  }

  /** Removes a range that `insert` returned (once). */
  remove(handle: RangeHandle): void {
    this.root = removeFrom(this.root, handle.start, handle.seq);
    this.count--;
  }

  /**
   * Calls `found` with the value of every range that contains `key` (`start <= key < end`), and
   * `stepped` (if given) at every node it looks at: the work, found or not.
   */
  stab(key: string, found: (value: T) => void, stepped?: () => void): void {
    const visit = (subtree: Node<T> | null): void => {
      let node = subtree;
      // Nothing below ends after the key: no range here contains it.
      while (node && node.maxEnd > key) {
        stepped?.();
        visit(node.left);
        // This node and all to its right start after the key.
        if (node.start > key) return;
        if (key < node.end) found(node.value);
        node = node.right;
      }
    };
    visit(this.root);
  }
}
