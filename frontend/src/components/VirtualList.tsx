// A virtualized list: only the rows in view (plus a margin) exist in the DOM, so 10,000 runs
// or 100,000 log lines scroll as smoothly as 50. Rows have a fixed height, or heights given as
// prefix sums (`offsets[i]` is the top of row i, `offsets[count]` the total).
import type { ComponentChildren, JSX } from "preact";
import { useEffect, useLayoutEffect, useRef, useState } from "preact/hooks";

export interface VirtualListProps {
  count: number;
  rowHeight: number;
  offsets?: Float64Array | null;
  renderRow: (index: number, top: number, height: number) => JSX.Element | null;
  header?: ComponentChildren;
  headerHeight?: number;
  overscan?: number;
  class?: string;
  /** Called with the rows in view whenever they change (to fetch what is missing). */
  onRange?: (start: number, end: number) => void;
  /** Keep the view at the bottom as rows are added (live logs), until the user scrolls up. */
  follow?: boolean;
  onFollowChange?: (following: boolean) => void;
  onScrollTop?: () => void;
  scrollToIndex?: { index: number; seq: number } | null;
  innerWidth?: string;
  label?: string;
}

function findRow(offsets: Float64Array, count: number, y: number): number {
  let lo = 0;
  let hi = count;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (offsets[mid + 1] <= y) lo = mid + 1;
    else hi = mid;
  }
  return Math.min(lo, Math.max(0, count - 1));
}

export function VirtualList(props: VirtualListProps) {
  const { count, rowHeight, offsets, overscan = 8 } = props;
  const headerHeight = props.headerHeight ?? 0;
  const ref = useRef<HTMLDivElement>(null);
  const [view, setView] = useState({ top: 0, height: 600 });
  const following = useRef(!!props.follow);
  const latest = useRef(props);
  latest.current = props;

  const total = offsets ? offsets[count] ?? 0 : count * rowHeight;
  const top = Math.max(0, view.top - headerHeight);
  let start: number;
  let end: number;
  if (offsets) {
    start = count ? findRow(offsets, count, top) : 0;
    end = count ? findRow(offsets, count, top + view.height) + 1 : 0;
  } else {
    start = Math.floor(top / rowHeight);
    end = Math.min(count, Math.ceil((top + view.height) / rowHeight));
  }
  const from = Math.max(0, start - overscan);
  const to = Math.min(count, end + overscan);

  useEffect(() => {
    const el = ref.current;
    if (!el) return;
    const update = () => setView({ top: el.scrollTop, height: el.clientHeight });
    const onScroll = () => {
      update();
      const p = latest.current;
      const atBottom = el.scrollHeight - el.scrollTop - el.clientHeight < 4;
      if (p.follow !== undefined && following.current !== atBottom) {
        following.current = atBottom;
        p.onFollowChange?.(atBottom);
      }
      if (el.scrollTop === 0) p.onScrollTop?.();
    };
    update();
    el.addEventListener("scroll", onScroll, { passive: true });
    const ro = new ResizeObserver(update);
    ro.observe(el);
    return () => {
      el.removeEventListener("scroll", onScroll);
      ro.disconnect();
    };
  }, []);

  useEffect(() => {
    props.onRange?.(start, end);
  }, [start, end, count]);

  useEffect(() => {
    following.current = !!props.follow;
  }, [props.follow]);

  useLayoutEffect(() => {
    const el = ref.current;
    if (el && props.follow && following.current) {
      el.scrollTop = el.scrollHeight;
    }
  }, [total, props.follow]);

  useLayoutEffect(() => {
    const el = ref.current;
    const target = props.scrollToIndex;
    if (!el || !target) return;
    const y = offsets ? offsets[Math.min(target.index, count)] : target.index * rowHeight;
    el.scrollTop = Math.max(0, y);
  }, [props.scrollToIndex?.seq]);

  const rows: JSX.Element[] = [];
  for (let i = from; i < to; i++) {
    const y = offsets ? offsets[i] : i * rowHeight;
    const h = offsets ? offsets[i + 1] - offsets[i] : rowHeight;
    const row = props.renderRow(i, y + headerHeight, h);
    if (row) rows.push(row);
  }
  return (
    <div class={`vlist ${props.class ?? ""}`} ref={ref} aria-label={props.label} tabIndex={0}>
      <div class="vlist-inner" style={{ height: `${total + headerHeight}px`, minWidth: props.innerWidth }}>
        {props.header}
        {rows}
      </div>
    </div>
  );
}
