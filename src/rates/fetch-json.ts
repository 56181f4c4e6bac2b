/**
 * One GET of a ticker's JSON, bounded: a timeout for the whole exchange, a size cap on the body,
 * no redirects followed. Every failure (refused, slow, not 200, too large, not JSON) is null, never
 * an exception: a provider's fault is "no rate", not a crash of the request that asked.
 */

/** The largest answer read: a ticker's answer is a few KB (Coinbase's whole rates table ~20 KB). */
export const MAX_TICKER_BYTES = 256 * 1024;

export async function fetchJson(
  url: string,
  options: { timeoutMs: number; maxBytes?: number },
): Promise<unknown | null> {
  const maxBytes = options.maxBytes ?? MAX_TICKER_BYTES;
  const controller = new AbortController();
  const timer = setTimeout(() => controller.abort(), options.timeoutMs);
  try {
    const res = await fetch(url, {
      signal: controller.signal,
      redirect: "manual",
      headers: { accept: "application/json", "user-agent": "stablegate-rates/1.0" },
    });
    if (res.status !== 200 || !res.body) {
      await res.body?.cancel().catch(() => undefined);
      return null;
    }
    const declared = Number(res.headers.get("content-length") ?? "0");
    if (declared > maxBytes) {
      await res.body.cancel().catch(() => undefined);
      return null;
    }
    const chunks: Uint8Array[] = [];
    let size = 0;
    for await (const chunk of res.body) {
      size += chunk.byteLength;
      if (size > maxBytes) {
        controller.abort();
        return null;
      }
      chunks.push(chunk);
    }
    return JSON.parse(Buffer.concat(chunks).toString("utf8")) as unknown;
  } catch {
    return null;
  } finally {
    clearTimeout(timer);
  }
}
