import type { FastifyReply, FastifyRequest } from "fastify";
import { AppError } from "../domain/errors.js";
import { safeEqual } from "../lib/crypto.js";

/**
 * HTTP basic auth of the documentation (`/docs`: the API reference, the document, the guides) with
 * `DOCS_USER`/`DOCS_PASSWORD`; unset, everything there answers 404. Both halves are compared in
 * constant time.
 */
export function docsBasicAuth(
  docs: { user: string | undefined; password: string | undefined },
  what: string,
) {
  return async (request: FastifyRequest, reply: FastifyReply) => {
    const { user, password } = docs;
    if (!user || !password) throw AppError.notFound();
    const [scheme, encoded] = (request.headers.authorization ?? "").split(" ");
    const decoded = scheme === "Basic" && encoded ? Buffer.from(encoded, "base64").toString("utf8") : "";
    const sep = decoded.indexOf(":");
    const ok =
      sep > 0 && safeEqual(decoded.slice(0, sep), user) && safeEqual(decoded.slice(sep + 1), password);
    if (!ok) {
      reply.header("WWW-Authenticate", 'Basic realm="stablegate API reference"');
      throw AppError.invalidAuth(`${what} requires a user name and password.`);
    }
  };
}
