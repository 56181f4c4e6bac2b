/**
 * Ports a webhook or checkout callback URL may use (docs/merchants/webhooks.md#your-webhook-url, README.md#configuration `WEBHOOK_ALLOWED_PORTS`):
 * without a limit the sender is a port scanner of any host a merchant names.
 */
export const DEFAULT_WEBHOOK_PORTS: readonly number[] = [80, 443, 8080, 8443];

/** The port a URL dials: its own, else its scheme's (WHATWG URLs drop a port equal to the scheme's). */
export function dialPort(url: URL): number {
  if (url.port !== "") return Number(url.port);
  return url.protocol === "https:" ? 443 : 80;
}
