/**
 * Held deposits (README.md#frozen-funds, issue #40): a deposit whose sender the token's issuer
 * froze, or a screening provider refused, is `held` until the owner or an admin releases or
 * returns it. Its `holdReason` is `token_blacklist` or `screening: <the provider's reason>`.
 *
 * No React here (and no imports): the tests import this file.
 */

/** A hold reason in plain words; an unknown code shows as it is. */
export function holdReasonText(reason: string | null | undefined): string | null {
  if (!reason) return null;
  if (reason === "token_blacklist") return "The token's issuer froze the sender's address";
  const screening = /^screening(?::\s*(.*))?$/s.exec(reason);
  if (screening) {
    const why = screening[1]?.trim();
    return why ? `Refused by screening: ${why}` : "Refused by screening";
  }
  return reason;
}
