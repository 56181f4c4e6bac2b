import http from "node:http";

/**
 * Helpers of the security tests. `rawRequest` sends the request target exactly as written
 * (fetch and `new URL` would resolve `/./`, `/x/../` and `%2e` before sending, so the server
 * would never see those spellings).
 */

export interface RawResponse {
  status: number;
  headers: http.IncomingHttpHeaders;
  text: string;
  body: any;
}

export function rawRequest(
  base: string,
  method: string,
  target: string,
  init: { headers?: Record<string, string>; body?: string; localAddress?: string; family?: 4 | 6 } = {},
): Promise<RawResponse> {
  const url = new URL(base);
  return new Promise((resolve, reject) => {
    const req = http.request(
      {
        host: url.hostname.replace(/^\[|\]$/g, ""),
        port: url.port,
        method,
        path: target,
        headers: {
          ...(init.body !== undefined ? { "content-type": "application/json" } : {}),
          ...init.headers,
        },
        ...(init.localAddress ? { localAddress: init.localAddress } : {}),
        ...(init.family ? { family: init.family } : {}),
        agent: false,
      },
      (res) => {
        let text = "";
        res.setEncoding("utf8");
        res.on("data", (c: string) => {
          text += c;
        });
        res.on("end", () => {
          let body: unknown;
          try {
            body = text ? JSON.parse(text) : undefined;
          } catch {
            body = undefined;
          }
          resolve({ status: res.statusCode ?? 0, headers: res.headers, text, body });
        });
      },
    );
    req.on("error", reject);
    req.end(init.body);
  });
}

/** Runs `fn` over `items` with at most `width` in flight. */
export async function inBatches<T>(items: T[], width: number, fn: (item: T) => Promise<void>) {
  for (let i = 0; i < items.length; i += width) await Promise.all(items.slice(i, i + width).map(fn));
}

const hex = (c: string, upper: boolean) => {
  const h = c.charCodeAt(0).toString(16).padStart(2, "0");
  return `%${upper ? h.toUpperCase() : h}`;
};

/**
 * Other spellings of a route template (`{name}` parameters are left alone): each letter
 * percent-encoded (lower and upper hex digits), every letter encoded, upper/mixed case per
 * segment, doubled slashes, dot segments (`/./`, `/x/../`, and their encoded `%2e` forms),
 * encoded slashes, a trailing slash, `;` parameters and a backslash.
 */
export function spellings(template: string, options: { full?: boolean } = {}): string[] {
  const full = options.full ?? true;
  const out = new Set<string>();
  const fixed: number[] = [];
  let depth = 0;
  for (let i = 0; i < template.length; i++) {
    const c = template[i] as string;
    if (c === "{") depth++;
    else if (c === "}") depth--;
    else if (depth === 0 && /[a-z0-9]/i.test(c)) fixed.push(i);
  }
  const at = (i: number, s: string) => template.slice(0, i) + s + template.slice(i + 1);
  const letters = full ? fixed : fixed.filter((_i, k) => k % 4 === 0);
  for (const i of letters) {
    out.add(at(i, hex(template[i] as string, false)));
    if (full) out.add(at(i, hex(template[i] as string, true)));
  }
  let all = "";
  for (let i = 0; i < template.length; i++)
    all += fixed.includes(i) ? hex(template[i] as string, false) : template[i];
  out.add(all);

  const segments = template.split("/");
  const joinWith = (k: number, s: string) => [...segments.slice(0, k), s, ...segments.slice(k + 1)].join("/");
  for (let k = 1; k < segments.length; k++) {
    const seg = segments[k] as string;
    if (seg.startsWith("{")) continue;
    out.add(joinWith(k, seg.toUpperCase()));
    out.add(joinWith(k, seg.charAt(0).toUpperCase() + seg.slice(1)));
  }
  out.add(template.toUpperCase().replace(/\{[A-Z]+\}/g, (m) => m.toLowerCase()));

  const slashes: number[] = [];
  for (let i = 0; i < template.length; i++) if (template[i] === "/") slashes.push(i);
  for (const i of slashes) {
    const before = template.slice(0, i);
    const after = template.slice(i + 1);
    out.add(`${before}//${after}`);
    out.add(`${before}/./${after}`);
    out.add(`${before}/x/../${after}`);
    out.add(`${before}/%2e/${after}`);
    out.add(`${before}/x/%2e%2E/${after}`);
    if (i > 0) {
      // A target that does not start with "/" is refused by Node's parser before the app.
      out.add(`${before}\\${after}`);
      out.add(`${before}%2F${after}`);
      out.add(`${before}%2f${after}`);
      out.add(`${before};x=1/${after}`);
    }
  }
  out.add(`${template}/`);
  out.add(`${template}//`);
  out.add(`${template};`);
  out.add(`${template};x=1`);
  out.add(`${template}/.`);
  out.add(`${template}%00`);
  out.add(`${template}%20`);
  out.add(`${template}?x=1`);
  out.add(`${template}#x`);
  out.delete(template);
  return [...out];
}

/** `{name}` parameters replaced by `values[name]`. */
export function fill(template: string, values: Record<string, string>): string {
  return template.replace(/\{(\w+)\}/g, (m, name: string) => values[name] ?? m);
}
