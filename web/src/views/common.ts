// What several views share: a text's colour hash, how a time is written where the page itself
// lays time out (a zoomed range, a box of the stack chart, the axis), and
// the width of an element, followed as the window is resized.
import type {RefObject} from 'preact';
import {useLayoutEffect, useState} from 'preact/hooks';

// A string's hash, the same across reloads: what the views colour by.
export function textHash(text: string): number {
  let hash = 0;
  for (let i = 0; i < text.length; i++) hash = (hash * 31 + text.charCodeAt(i)) | 0;
  return Math.abs(hash);
}

// "1.234 ms", "56 µs", "2.5 s".
export function duration(ns: number): string {
  if (ns >= 1e9) return `${(ns / 1e9).toPrecision(4)} s`;
  if (ns >= 1e6) return `${(ns / 1e6).toPrecision(4)} ms`;
  if (ns >= 1e3) return `${(ns / 1e3).toPrecision(3)} µs`;
  return `${Math.round(ns)} ns`;
}

// The width of `ref`'s element in CSS pixels (0 until it is laid out).
export function useWidth(ref: RefObject<HTMLElement | null>): number {
  const [width, setWidth] = useState(0);
  // Measured as the element is laid out (a layout effect, then a render
  // before the paint), so that the first drawing has its width.
  useLayoutEffect(() => {
    const el = ref.current!;
    setWidth(el.clientWidth);
    const observer = new ResizeObserver(() => setWidth(el.clientWidth));
    observer.observe(el);
    return () => observer.disconnect();
  }, []);
  return width;
}
