/**
 * A Server-Sent Events parser (the WHATWG "event stream interpretation", the parts a client of the
 * webhook stream needs: `id`, `event`, `data`, `retry`, comments). Written by hand: the SDK has no
 * runtime dependency, and the rules fit in this page.
 */

export interface SseMessage {
  /** The `id:` of this message, or the last one seen (the spec's "last event ID"). */
  id: string | undefined;
  event: string;
  data: string;
}

export class SseParser {
  #buffer = "";
  #data: string[] = [];
  #event = "";
  #hasData = false;
  /** The last event id (kept across messages, as the spec says). */
  lastEventId: string | undefined;
  /** The server's `retry:` in milliseconds, when it sent one. */
  retryMs: number | undefined;

  /** Feeds decoded text; returns the messages it completed. */
  push(text: string): SseMessage[] {
    this.#buffer += text;
    const out: SseMessage[] = [];
    for (;;) {
      const match = /\r\n|\r|\n/.exec(this.#buffer);
      // A lone "\r" at the end may be the first half of "\r\n": wait for the next chunk.
      if (!match || (match[0] === "\r" && match.index === this.#buffer.length - 1)) break;
      const line = this.#buffer.slice(0, match.index);
      this.#buffer = this.#buffer.slice(match.index + match[0].length);
      const message = this.#line(line);
      if (message) out.push(message);
    }
    return out;
  }

  #line(line: string): SseMessage | undefined {
    if (line === "") {
      const message = this.#hasData
        ? { id: this.lastEventId, event: this.#event || "message", data: this.#data.join("\n") }
        : undefined;
      this.#data = [];
      this.#event = "";
      this.#hasData = false;
      return message;
    }
    if (line.startsWith(":")) return undefined; // a comment (keep-alive)
    const colon = line.indexOf(":");
    const field = colon === -1 ? line : line.slice(0, colon);
    let value = colon === -1 ? "" : line.slice(colon + 1);
    if (value.startsWith(" ")) value = value.slice(1);
    if (field === "data") {
      this.#data.push(value);
      this.#hasData = true;
    } else if (field === "event") this.#event = value;
    else if (field === "id" && !value.includes("\0")) this.lastEventId = value;
    else if (field === "retry" && /^\d+$/.test(value)) this.retryMs = Number(value);
    return undefined;
  }
}
