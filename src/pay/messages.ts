/**
 * Texts of the hosted payment page. English is the reference; every other language must translate
 * every key (the type says so). `{name}` placeholders are filled by `t` and escaped by the template;
 * `{token}` is the session's token (USDT, USDC), from the registry.
 */
const en = {
  title: "Pay with {token}",
  pageTitle: "Payment {amount} {token}",
  sandboxBadge: "Sandbox: test payment, no real funds",
  amountLabel: "Amount to send",
  networkLabel: "Network",
  addressLabel: "Send to this address",
  copyAddress: "Copy address",
  copyAmount: "Copy amount",
  copied: "Copied",
  qrLabel: "QR code with the payment details for a wallet app",
  qrHint: "Scan with your wallet app.",
  qrStale: "The amount due has changed: reload the page for an updated QR code.",
  warning:
    "Send only {token} on the {network} network to this address. Other tokens or networks cannot be recovered.",
  warningOtherNetworks:
    "Send only {token} on the {network} network to this address. {others} sent to it still reaches the merchant but does not pay this order; other tokens or networks cannot be recovered.",
  expiresAt: "Expires at {time}",
  timeLeft: "Time left:",
  statusLabel: "Payment status",
  stateWaiting: "Waiting for your payment…",
  statePartial: "Partially paid: {received} {token} received. Please send the remaining {remaining} {token}.",
  stateConfirming: "Payment detected — confirming {current} of {required}.",
  statePaid: "Payment received. Thank you!",
  stateExpired: "This payment request has expired. Please do not send any funds to this address.",
  statePartialExpired:
    "This payment request expired after a partial payment of {received} {token}. The merchant has received it; please contact them about the rest.",
  txLabel: "Transaction",
  confirmedAtLabel: "Confirmed at",
  refresh: "Refresh status",
  noscript: "This page refreshes every 30 seconds to show the payment status.",
  orderLabel: "Order",
  languageLabel: "Language",
  notFoundTitle: "Payment not found",
  notFoundText: "There is no payment at this address. Please check the link you received from the merchant.",
  poweredBy: "Secure payment by stablegate",
  /** One entry of `{others}`: "USDT on Polygon PoS". */
  tokenOnNetwork: "{token} on {network}",
  listSeparator: ", ",
} as const;

export type MessageKey = keyof typeof en;
export type Messages = Readonly<Record<MessageKey, string>>;

const de: Messages = {
  title: "Mit {token} bezahlen",
  pageTitle: "Zahlung {amount} {token}",
  sandboxBadge: "Sandbox: Testzahlung, kein echtes Geld",
  amountLabel: "Zu sendender Betrag",
  networkLabel: "Netzwerk",
  addressLabel: "An diese Adresse senden",
  copyAddress: "Adresse kopieren",
  copyAmount: "Betrag kopieren",
  copied: "Kopiert",
  qrLabel: "QR-Code mit den Zahlungsdaten für eine Wallet-App",
  qrHint: "Mit Ihrer Wallet-App scannen.",
  qrStale:
    "Der offene Betrag hat sich geändert: Laden Sie die Seite neu, um einen aktuellen QR-Code zu erhalten.",
  warning:
    "Senden Sie nur {token} im {network}-Netzwerk an diese Adresse. Andere Token oder Netzwerke können nicht wiederhergestellt werden.",
  warningOtherNetworks:
    "Senden Sie nur {token} im {network}-Netzwerk an diese Adresse. {others}, an sie gesendet, erreicht den Händler trotzdem, bezahlt aber diese Bestellung nicht; andere Token oder Netzwerke können nicht wiederhergestellt werden.",
  expiresAt: "Gültig bis {time}",
  timeLeft: "Verbleibende Zeit:",
  statusLabel: "Zahlungsstatus",
  stateWaiting: "Warten auf Ihre Zahlung…",
  statePartial:
    "Teilweise bezahlt: {received} {token} erhalten. Bitte senden Sie die restlichen {remaining} {token}.",
  stateConfirming: "Zahlung erkannt — Bestätigung {current} von {required}.",
  statePaid: "Zahlung erhalten. Vielen Dank!",
  stateExpired: "Diese Zahlungsanforderung ist abgelaufen. Bitte senden Sie kein Geld mehr an diese Adresse.",
  statePartialExpired:
    "Diese Zahlungsanforderung ist nach einer Teilzahlung von {received} {token} abgelaufen. Der Händler hat sie erhalten; bitte wenden Sie sich wegen des Rests an ihn.",
  txLabel: "Transaktion",
  confirmedAtLabel: "Bestätigt am",
  refresh: "Status aktualisieren",
  noscript: "Diese Seite lädt alle 30 Sekunden neu, um den Zahlungsstatus anzuzeigen.",
  orderLabel: "Bestellung",
  languageLabel: "Sprache",
  notFoundTitle: "Zahlung nicht gefunden",
  notFoundText:
    "Unter dieser Adresse gibt es keine Zahlung. Bitte prüfen Sie den Link, den Sie vom Händler erhalten haben.",
  poweredBy: "Sichere Zahlung über stablegate",
  tokenOnNetwork: "{token} im {network}-Netzwerk",
  listSeparator: ", ",
};

export const LANGUAGES = ["en", "de"] as const;
export type Language = (typeof LANGUAGES)[number];

/** Name of each language in itself, for the language switcher. */
export const LANGUAGE_NAMES: Readonly<Record<Language, string>> = { en: "English", de: "Deutsch" };

const TABLE: Readonly<Record<Language, Messages>> = { en, de };

/** Decimal separator of each language (amounts stay exact: only the separator changes). */
export const DECIMAL_SEPARATOR: Readonly<Record<Language, string>> = { en: ".", de: "," };

export function messages(lang: Language): Messages {
  return TABLE[lang];
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
 * `Accept-Language` (q-values honoured, `de-CH` matches `de`, `q=0` excludes), else English.
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
      return { primary: tag.trim().toLowerCase().split("-")[0] ?? "", q, index };
    })
    .filter((r) => r.q > 0 && r.primary !== "")
    .sort((a, b) => b.q - a.q || a.index - b.index);
  for (const r of ranges) {
    if (isLanguage(r.primary)) return r.primary;
    if (r.primary === "*") return "en";
  }
  return "en";
}
