import de from "./messages/de.json" with { type: "json" };
import en from "./messages/en.json" with { type: "json" };
import es from "./messages/es.json" with { type: "json" };
import fr from "./messages/fr.json" with { type: "json" };
import pt from "./messages/pt.json" with { type: "json" };
import ru from "./messages/ru.json" with { type: "json" };
import tr from "./messages/tr.json" with { type: "json" };
import zh from "./messages/zh.json" with { type: "json" };

/**
 * Texts of the hosted payment page, one JSON file per language in `messages/` (a translator edits
 * only those). English is the reference: the type below makes every other file carry every key of
 * `en.json`, and `test/pay/messages.test.ts` fails on an extra key, an empty text or placeholders
 * that differ from English. `{name}` placeholders are filled by `t` and escaped by the template;
 * `{token}` is the session's token (USDT, USDC), from the registry; `{merchant}` the shop's name.
 */
export type MessageKey = keyof typeof en;
export type Messages = Readonly<Record<MessageKey, string>>;

export const LANGUAGES = ["en", "de", "fr", "es", "pt", "tr", "ru", "zh"] as const;
export type Language = (typeof LANGUAGES)[number];

/** Name of each language in itself, for the language switcher. */
export const LANGUAGE_NAMES: Readonly<Record<Language, string>> = {
  en: "English",
  de: "Deutsch",
  fr: "Français",
  es: "Español",
  pt: "Português",
  tr: "Türkçe",
  ru: "Русский",
  zh: "中文",
};

/** The locale `Intl` formats dates and numbers with for each language. */
export const LOCALES: Readonly<Record<Language, string>> = {
  en: "en-GB",
  de: "de-DE",
  fr: "fr-FR",
  es: "es-ES",
  pt: "pt-BR",
  tr: "tr-TR",
  ru: "ru-RU",
  zh: "zh-CN",
};

const TABLE: Readonly<Record<Language, Messages>> = { en, de, fr, es, pt, tr, ru, zh };

/** Decimal separator of each language, from its locale (amounts stay exact: only the separator changes). */
export const DECIMAL_SEPARATOR: Readonly<Record<Language, string>> = Object.fromEntries(
  LANGUAGES.map((l) => [
    l,
    new Intl.NumberFormat(LOCALES[l]).formatToParts(1.5).find((p) => p.type === "decimal")?.value ?? ".",
  ]),
) as Record<Language, string>;

export function messages(lang: Language): Messages {
  return TABLE[lang];
}

/** The `{name}` placeholders of a text, sorted (the test compares them across languages). */
export function placeholders(text: string): string[] {
  return [...new Set([...text.matchAll(/\{(\w+)\}/g)].map((m) => m[1] ?? ""))].sort();
}

/** A message with its `{name}` placeholders filled (plain text: the template escapes it). */
export function t(lang: Language, key: MessageKey, vars: Record<string, string> = {}): string {
  return TABLE[lang][key].replace(/\{(\w+)\}/g, (whole, name: string) => vars[name] ?? whole);
}

function isLanguage(v: string): v is Language {
  return (LANGUAGES as readonly string[]).includes(v);
}

/**
 * The page language: `?lang=` when it names a supported language, else the best supported entry of
 * `Accept-Language` (q-values honoured, a regional tag matches its language — `de-CH` → de, `zh-CN`
 * and `zh-Hant-TW` → zh, `pt-BR` → pt —, `q=0` excludes), else English.
 */
export function chooseLanguage(query: string | undefined, acceptLanguage: string | undefined): Language {
  const asked = query?.trim().toLowerCase();
  if (asked && isLanguage(asked)) return asked;
  if (!acceptLanguage) return "en";
  const ranges = acceptLanguage
    .split(",")
    .slice(0, 20)
    .map((part, index) => {
      const [tag = "", ...params] = part.trim().split(";");
      let q = 1;
      for (const p of params) {
        const m = /^\s*q\s*=\s*([01](?:\.\d{0,3})?)\s*$/i.exec(p);
        if (m) q = Number(m[1]);
      }
      return { primary: tag.trim().toLowerCase().split(/[-_]/)[0] ?? "", q, index };
    })
    .filter((r) => r.q > 0 && r.primary !== "")
    .sort((a, b) => b.q - a.q || a.index - b.index);
  for (const r of ranges) {
    if (isLanguage(r.primary)) return r.primary;
    if (r.primary === "*") return "en";
  }
  return "en";
}
