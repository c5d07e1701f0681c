/**
 * The event loop's own delay, measured apart from the dependencies: a busy loop (large answers
 * being parsed and rendered) makes every timer fire late, and a probe that timed its dependency
 * on such a timer reported a healthy store as down. Here the delay is a figure of its own (the
 * metrics' `svc_event_loop_delay_seconds`, and a readiness reason named as such), and
 * `fairTimeout` times a call by the time the loop could actually have handled its answer.
 */
import { monitorEventLoopDelay, performance, type IntervalHistogram } from 'node:perf_hooks';

/** How often the delay figures are rolled over: each figure covers the last full window. */
const WINDOW_MS = 5000;

export interface LoopDelay {
  /** Milliseconds, over the last full window (or the current one while the first runs). */
  p50Ms: number;
  p99Ms: number;
  maxMs: number;
}

let histogram: IntervalHistogram | null = null;
let last: LoopDelay = { p50Ms: 0, p99Ms: 0, maxMs: 0 };

const figures = (h: IntervalHistogram): LoopDelay => ({
  p50Ms: h.count ? h.percentile(50) / 1e6 : 0,
  p99Ms: h.count ? h.percentile(99) / 1e6 : 0,
  maxMs: h.count ? h.max / 1e6 : 0,
});

/** Starts measuring (once per process; unref'd, it never keeps the process alive). */
export function watchLoopDelay(): void {
  if (histogram) return;
  const h = monitorEventLoopDelay({ resolution: 10 });
  h.enable();
  histogram = h;
  setInterval(() => {
    last = figures(h);
    h.reset();
  }, WINDOW_MS).unref();
}

/** The loop's delay: the last full window's figures, or the current window's when it is worse (a loop stalled right now). */
export function loopDelay(): LoopDelay {
  if (!histogram) return last;
  const now = figures(histogram);
  return now.p99Ms > last.p99Ms ? now : last;
}

/** A timer that fired this much (or half its time, if more) after its time was held up by the loop, not by what it timed. */
const LATE_MS = 50;

/**
 * Rejects when `promise` has not settled within `ms` of time the loop was free to handle its
 * answer: when the timer fires late (a busy loop), the call gets `ms` again (at most three times),
 * and before giving up, answers that already arrived are read first (the timer phase runs before
 * the loop reads sockets). A failed call fails at once, as it is.
 */
export function fairTimeout<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    let settled = false;
    let due = performance.now() + ms;
    let extensions = 0;
    let timer: NodeJS.Timeout | undefined;
    const fire = () => {
      const firedAt = performance.now();
      const late = firedAt - due;
      // Reads the sockets first: an answer that arrived while the loop was busy counts.
      setImmediate(() => {
        if (settled) return;
        if (late > Math.max(LATE_MS, ms / 2) && extensions < 3) {
          extensions += 1;
          due = performance.now() + ms;
          timer = setTimeout(fire, ms);
          return;
        }
        settled = true;
        reject(new Error(`${what} timed out after ${ms} ms`));
      });
    };
    timer = setTimeout(fire, ms);
    promise.then(
      (value) => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        resolve(value);
      },
      (error: unknown) => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        reject(error instanceof Error ? error : new Error(String(error)));
      },
    );
  });
}
