import { describe, expect, it } from "vitest";
import { Coalescer } from "../../src/lib/coalescer.js";

/** A batch runner whose batches finish only when the test says so. */
function controlled() {
  const batches: { items: number[]; finish: (fail?: boolean) => void }[] = [];
  const run = (items: number[]) =>
    new Promise<string[]>((resolve, reject) => {
      batches.push({
        items,
        finish: (fail) => (fail ? reject(new Error("batch failed")) : resolve(items.map((i) => `r${i}`))),
      });
    });
  return { batches, run };
}

const tick = () => new Promise((r) => setImmediate(r));

describe("Coalescer: concurrent items share a batch", () => {
  it("runs an item alone at once when nothing is in flight", async () => {
    const { batches, run } = controlled();
    const c = new Coalescer(run, { maxBatch: 4, maxInFlight: 2, splitOnError: false });
    const a = c.submit(1);
    expect(batches.map((b) => b.items)).toEqual([[1]]);
    batches[0]?.finish();
    expect(await a).toBe("r1");
    await tick(); // the finished batch's slot is freed
    const b = c.submit(2);
    expect(batches.map((x) => x.items)).toEqual([[1], [2]]);
    batches[1]?.finish();
    expect(await b).toBe("r2");
  });

  it("items arriving while a batch runs go together in the next one, up to maxBatch", async () => {
    const { batches, run } = controlled();
    const c = new Coalescer(run, { maxBatch: 4, maxInFlight: 2, splitOnError: false });
    const results = [c.submit(1), c.submit(2), c.submit(3), c.submit(4)];
    // 1 runs alone; 2..4 wait (not a full batch, so no second statement starts).
    expect(batches.map((b) => b.items)).toEqual([[1]]);
    batches[0]?.finish();
    await tick();
    expect(batches.map((b) => b.items)).toEqual([[1], [2, 3, 4]]);
    batches[1]?.finish();
    expect(await Promise.all(results)).toEqual(["r1", "r2", "r3", "r4"]);
  });

  it("a full batch starts a second statement in flight, never more than maxInFlight", async () => {
    const { batches, run } = controlled();
    const c = new Coalescer(run, { maxBatch: 2, maxInFlight: 2, splitOnError: false });
    const results = Array.from({ length: 7 }, (_, i) => c.submit(i));
    // 0 alone; then [1, 2] is full → second in flight; 3..6 wait for a slot.
    expect(batches.map((b) => b.items)).toEqual([[0], [1, 2]]);
    batches[0]?.finish();
    await tick();
    expect(batches.map((b) => b.items)).toEqual([[0], [1, 2], [3, 4]]);
    batches[1]?.finish();
    await tick();
    expect(batches.map((b) => b.items)).toEqual([[0], [1, 2], [3, 4], [5, 6]]);
    batches[2]?.finish();
    batches[3]?.finish();
    expect(await Promise.all(results)).toEqual(["r0", "r1", "r2", "r3", "r4", "r5", "r6"]);
  });

  it("splitOnError: a failed batch is retried item by item, so only the bad item fails", async () => {
    const calls: number[][] = [];
    const c = new Coalescer(
      async (items: number[]) => {
        calls.push(items);
        if (items.includes(13)) throw new Error(`bad item in ${items.join(",")}`);
        return items.map((i) => i * 10);
      },
      { maxBatch: 8, maxInFlight: 1, splitOnError: true },
    );
    const settled = await Promise.allSettled([c.submit(1), c.submit(12), c.submit(13), c.submit(14)]);
    expect(settled.map((s) => (s.status === "fulfilled" ? s.value : (s.reason as Error).message))).toEqual([
      10,
      120,
      "bad item in 13",
      140,
    ]);
    // 1 alone, then the batch [12, 13, 14], then each of its items alone.
    expect(calls).toEqual([[1], [12, 13, 14], [12], [13], [14]]);
  });

  it("without splitOnError every item of a failed batch gets the error", async () => {
    const { batches, run } = controlled();
    const c = new Coalescer(run, { maxBatch: 4, maxInFlight: 1, splitOnError: false });
    const first = c.submit(1);
    const rest = [c.submit(2), c.submit(3)];
    batches[0]?.finish();
    await first;
    await tick();
    batches[1]?.finish(true);
    const settled = await Promise.allSettled(rest);
    expect(settled.map((s) => s.status)).toEqual(["rejected", "rejected"]);
    expect(batches).toHaveLength(2);
  });

  it("a runner returning the wrong number of results fails the batch's callers", async () => {
    const c = new Coalescer(async (items: number[]) => items.slice(1), {
      maxBatch: 4,
      maxInFlight: 1,
      splitOnError: false,
    });
    await expect(c.submit(1)).rejects.toThrow("a batch of 1 returned 0 results");
  });

  it("refuses a zero limit", () => {
    expect(
      () => new Coalescer(async (x: number[]) => x, { maxBatch: 0, maxInFlight: 1, splitOnError: false }),
    ).toThrow();
  });
});
