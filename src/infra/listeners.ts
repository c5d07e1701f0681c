/**
 * Guarded callbacks. What an event emitter or a stream calls (an HTTP server's `request`, busboy's
 * parts, a WebSocket's messages, a response's `finish`) runs outside any promise chain of the
 * request: a throw there, or the rejection of an async listener, is an uncaught exception, and an
 * uncaught exception ends the process with every connection on it. Every such callback on the
 * request path is registered through `guarded`, which hands the failure to the owner of the
 * request or socket instead (its 400/500 answer, the socket's error and close). Owns nothing else.
 */

/** Where a failure goes when the owner's own handler fails too: never back to the emitter. */
let lastResort: (error: unknown) => void = () => undefined;

/** The process-wide sink for a failure handler's own failure (the app's logger, app.ts). */
// Nothing left to tell past it: a guarded listener must still return normally.
export function setLastResort(sink: (error: unknown) => void): void {
  lastResort = sink;
}

/** For a failure no request or socket owns (a bus subscriber's handler): logged, never thrown. */
export function unowned(error: unknown): void {
  try {
    lastResort(error);
  } catch {
    // As above.
  }
}

function report<A extends unknown[]>(onFailure: (error: unknown, ...args: A) => void, error: unknown, args: A): void {
  try {
    onFailure(error, ...args);
  } catch (again) {
    unowned(again);
  }
}

/**
 * `listener`, made safe to hand to an emitter: a throw, or the rejection of the promise it answers,
 * goes to `onFailure` with the listener's own arguments (so one guarded function can serve every
 * request), never to the emitter.
 */
export function guarded<A extends unknown[]>(listener: (...args: A) => unknown, onFailure: (error: unknown, ...args: A) => void): (...args: A) => void {
  return (...args: A) => {
    try {
      const result = listener(...args);
      if (result instanceof Promise) result.catch((error: unknown) => report(onFailure, error, args));
    } catch (error) {
      report(onFailure, error, args);
    }
  };
}

/** A `guarded` for one owner: every listener it wraps reports to the same `onFailure`. */
export function guardFor(onFailure: (error: unknown) => void): <A extends unknown[]>(listener: (...args: A) => unknown) => (...args: A) => void {
  return <A extends unknown[]>(listener: (...args: A) => unknown) => guarded(listener, (error: unknown, ..._args: A) => onFailure(error));
}
