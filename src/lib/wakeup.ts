/** A sleep that a notification (or an abort) ends early; a notification while awake is kept for the next wait. */
export class Wakeup {
  #pending = false;
  #resolve: (() => void) | null = null;

  notify(): void {
    if (this.#resolve) this.#resolve();
    else this.#pending = true;
  }

  wait(ms: number, signal: AbortSignal): Promise<void> {
    if (this.#pending || signal.aborted) {
      this.#pending = false;
      return Promise.resolve();
    }
    return new Promise((resolve) => {
      const done = () => {
        clearTimeout(timer);
        signal.removeEventListener("abort", done);
        this.#resolve = null;
        resolve();
      };
      const timer = setTimeout(done, ms);
      signal.addEventListener("abort", done, { once: true });
      this.#resolve = done;
    });
  }
}
