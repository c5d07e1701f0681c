/**
 * A node's budget of bytes in flight for large reads (event pages): what a read holds from before
 * it asks the database until its answer has been written out (or its connection closed), so that
 * the pages a node parses, renders and buffers for slow readers together stay under one bound
 * whatever the number of concurrent readers. One holder key (an account) may hold at most a
 * quarter of the budget, so one account's readers cannot take it all from the others. A read that
 * does not fit waits (first come, first served among those that fit) up to `waitMs`, then is
 * refused with 503 SERVICE_UNAVAILABLE (the REST answer carries `Retry-After`).
 */
import { AppError, scrubbedMessages } from '../errors';

export interface ReadHold {
  /** Sets the bytes held to what the read turned out to cost (it may pass the budget: the read is done). */
  resize(bytes: number): void;
  /** Gives the bytes back; later calls do nothing. */
  release(): void;
}

interface Waiter {
  key: string;
  bytes: number;
  grant(): void;
}

/** Figures of every budget of this process, for the metrics (src/infra/metrics.ts). */
export const readBudgetFigures = { inFlightBytes: 0, waited: 0, refused: 0 };

export class ReadBudget {
  private used = 0;
  private readonly byKey = new Map<string, number>();
  private readonly waiters: Waiter[] = [];
  readonly perKey: number;

  constructor(
    readonly total: number,
    readonly waitMs: number,
  ) {
    this.perKey = Math.max(1, Math.floor(total / 4));
  }

  /** Bytes held now (all keys). */
  get inFlight(): number {
    return this.used;
  }

  private fits(key: string, bytes: number): boolean {
    const mine = this.byKey.get(key) ?? 0;
    // A read larger than a share on its own still runs when its holder holds nothing and the node has room.
    const shareOk = mine === 0 || mine + bytes <= this.perKey;
    const nodeOk = this.used === 0 || this.used + bytes <= this.total;
    return shareOk && nodeOk;
  }

  private take(key: string, bytes: number): ReadHold {
    let held = bytes;
    let released = false;
    const add = (delta: number) => {
      this.used += delta;
      readBudgetFigures.inFlightBytes += delta;
      const next = (this.byKey.get(key) ?? 0) + delta;
      if (next <= 0) this.byKey.delete(key);
      else this.byKey.set(key, next);
    };
    add(bytes);
    return {
      resize: (bytes: number) => {
        if (released) return;
        const delta = Math.max(0, bytes) - held;
        held += delta;
        add(delta);
        if (delta < 0) this.drain();
      },
      release: () => {
        if (released) return;
        released = true;
        add(-held);
        this.drain();
      },
    };
  }

  /** Grants the waiting reads that fit now, oldest first; one that does not fit does not hold back the others. */
  private drain(): void {
    for (let i = 0; i < this.waiters.length; ) {
      const waiter = this.waiters[i]!;
      if (this.fits(waiter.key, waiter.bytes)) {
        this.waiters.splice(i, 1);
        waiter.grant();
      } else i += 1;
    }
  }

  /** Holds `bytes` for `key`, waiting up to `waitMs` for room; refuses with 503 after that. */
  acquire(key: string, bytes: number): Promise<ReadHold> {
    if (this.fits(key, bytes)) return Promise.resolve(this.take(key, bytes));
    readBudgetFigures.waited += 1;
    return new Promise<ReadHold>((resolve, reject) => {
      const waiter: Waiter = {
        key,
        bytes,
        grant: () => {
          clearTimeout(timer);
          resolve(this.take(key, bytes));
        },
      };
      const timer = setTimeout(() => {
        const at = this.waiters.indexOf(waiter);
        if (at >= 0) this.waiters.splice(at, 1);
        readBudgetFigures.refused += 1;
        reject(new AppError('SERVICE_UNAVAILABLE', scrubbedMessages.SERVICE_UNAVAILABLE));
      }, this.waitMs);
      timer.unref?.();
      this.waiters.push(waiter);
    });
  }
}
