import type { AddressInfo } from "node:net";
import net from "node:net";
import type { Locator } from "playwright-core";

/** A free local port (the dashboard tests' service and static servers). */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = net.createServer();
    s.once("error", reject);
    s.listen(0, "127.0.0.1", () => {
      const { port } = s.address() as AddressInfo;
      s.close(() => resolve(port));
    });
  });
}

/** Retries an assertion until it holds (the UI and the worker are asynchronous), at most `timeout` ms. */
export async function retryUntil<T>(assertion: () => Promise<T>, timeout: number): Promise<T> {
  const start = Date.now();
  for (;;) {
    try {
      return await assertion();
    } catch (e) {
      if (Date.now() - start > timeout) throw e;
      await new Promise((r) => setTimeout(r, 100));
    }
  }
}

/** Web-first waits on playwright-core's auto-waiting locators (what each browser test builds on). */
export function waitingLocator(loc: Locator) {
  return {
    toBeVisible: (o?: { timeout?: number }) => loc.first().waitFor({ state: "visible", ...o }),
    toBeHidden: (o?: { timeout?: number }) => loc.first().waitFor({ state: "hidden", ...o }),
    toContainText: (t: string | RegExp, o?: { timeout?: number }) =>
      loc
        .filter({ hasText: t })
        .first()
        .waitFor({ state: "visible", ...o }),
  };
}
