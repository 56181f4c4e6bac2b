/**
 * A tiny `html` tagged template: every interpolated value is escaped unless it is already `SafeHtml`
 * (the result of another `html` template or of `raw`). The page has a handful of templates, so a
 * template engine would add a dependency and a second escaping model for no gain (see
 * docs/decisions/deposits-page.md).
 */
export class SafeHtml {
  constructor(readonly value: string) {}
  toString(): string {
    return this.value;
  }
}

const ESCAPES: Readonly<Record<string, string>> = {
  "&": "&amp;",
  "<": "&lt;",
  ">": "&gt;",
  '"': "&quot;",
  "'": "&#39;",
};

/** Escapes text for HTML element content and quoted attribute values. */
export function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => ESCAPES[c] ?? c);
}

/** Markup we produced ourselves (e.g. the QR code's SVG). Never pass user input. */
export function raw(markup: string): SafeHtml {
  return new SafeHtml(markup);
}

function interpolate(value: unknown): string {
  if (value instanceof SafeHtml) return value.value;
  if (value === null || value === undefined || value === false) return "";
  if (Array.isArray(value)) return value.map(interpolate).join("");
  return escapeHtml(String(value));
}

/** `html\`<p>${text}</p>\`` → SafeHtml with `text` escaped. Arrays are joined; null/undefined/false vanish. */
export function html(strings: TemplateStringsArray, ...values: unknown[]): SafeHtml {
  let out = strings[0] ?? "";
  for (let i = 0; i < values.length; i++) out += interpolate(values[i]) + (strings[i + 1] ?? "");
  return new SafeHtml(out);
}
