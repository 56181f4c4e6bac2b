import { Agent, request } from "undici";
import { type Clock, systemClock } from "../lib/clock.js";
import { authHeaders, newRequestId } from "./hmac.js";
import {
  type SignContext,
  type SignedTransaction,
  type Signer,
  SignerRejectedError,
  SignerUnavailableError,
  type SignRequest,
} from "./protocol.js";

export interface HttpSignerClientOptions {
  /** `SIGNER_URL`, e.g. http://10.0.0.5:8090 */
  url: string;
  /** `INTERNAL_SHARED_SECRET`. */
  secret: string;
  timeoutMs?: number;
  clock?: Clock;
}

/** `Signer` over the signer role's HTTP endpoint (HMAC-authenticated, keep-alive connections). */
export class HttpSignerClient implements Signer {
  private readonly agent: Agent;
  private readonly endpoint: string;

  constructor(private readonly options: HttpSignerClientOptions) {
    this.endpoint = new URL("/v1/sign", options.url).toString();
    this.agent = new Agent({ connections: 16, keepAliveTimeout: 30_000 });
  }

  async sign(signRequest: SignRequest, context: SignContext = {}): Promise<SignedTransaction> {
    // The intent id is inside the authenticated body (the HMAC covers it).
    const body = JSON.stringify({
      requestId: newRequestId(),
      request: signRequest,
      ...(context.intentId !== undefined ? { intentId: context.intentId } : {}),
    });
    const timeout = this.options.timeoutMs ?? 10_000;
    let status: number;
    let text: string;
    try {
      const res = await request(this.endpoint, {
        method: "POST",
        dispatcher: this.agent,
        headers: {
          "content-type": "application/json",
          ...authHeaders(this.options.secret, body, (this.options.clock ?? systemClock).now()),
        },
        body,
        headersTimeout: timeout,
        bodyTimeout: timeout,
      });
      status = res.statusCode;
      text = await res.body.text();
    } catch (cause) {
      throw new SignerUnavailableError("signer unreachable", { cause });
    }
    if (status === 200) return JSON.parse(text) as SignedTransaction;
    const error = safeError(text);
    if (status === 422) throw new SignerRejectedError(error);
    throw new SignerUnavailableError(`signer answered ${status} (${error})`);
  }

  close(): Promise<void> {
    return this.agent.close();
  }
}

function safeError(text: string): string {
  try {
    const e = (JSON.parse(text) as { error?: unknown }).error;
    return typeof e === "string" ? e.slice(0, 200) : "unknown";
  } catch {
    return "unknown";
  }
}
