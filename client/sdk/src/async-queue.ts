/** A push-fed async iterator: values pushed before anyone reads are kept until read. */
export class AsyncQueue<T> implements AsyncIterableIterator<T> {
  private readonly values: T[] = [];
  private readonly waiters: Array<{ resolve: (r: IteratorResult<T>) => void; reject: (e: unknown) => void }> = [];
  private ended = false;
  private failure: { error: unknown } | null = null;
  private readonly onReturn: (() => void) | undefined;

  constructor(onReturn?: () => void) {
    this.onReturn = onReturn;
  }

  get isEnded(): boolean {
    return this.ended;
  }

  push(value: T): void {
    if (this.ended) return;
    const waiter = this.waiters.shift();
    if (waiter) waiter.resolve({ value, done: false });
    else this.values.push(value);
  }

  /** No more values: readers get what is buffered, then `done`. */
  end(): void {
    if (this.ended) return;
    this.ended = true;
    for (const w of this.waiters.splice(0)) w.resolve({ value: undefined, done: true });
  }

  /** Readers get what is buffered, then the error. */
  fail(error: unknown): void {
    if (this.ended) return;
    this.ended = true;
    this.failure = { error };
    for (const w of this.waiters.splice(0)) w.reject(error);
  }

  next(): Promise<IteratorResult<T>> {
    if (this.values.length > 0) return Promise.resolve({ value: this.values.shift()!, done: false });
    if (this.failure) {
      const { error } = this.failure;
      this.failure = null;
      return Promise.reject(error);
    }
    if (this.ended) return Promise.resolve({ value: undefined, done: true });
    return new Promise((resolve, reject) => this.waiters.push({ resolve, reject }));
  }

  /** The reader stops early (`break` in `for await`). */
  return(): Promise<IteratorResult<T>> {
    this.values.length = 0;
    this.failure = null;
    if (!this.ended) {
      this.end();
      this.onReturn?.();
    }
    return Promise.resolve({ value: undefined, done: true });
  }

  [Symbol.asyncIterator](): AsyncIterableIterator<T> {
    return this;
  }
}
