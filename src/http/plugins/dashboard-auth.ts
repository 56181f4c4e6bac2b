import type { FastifyRequest } from "fastify";
import { AppError } from "../../domain/errors.js";
import type { Principal } from "../context.js";

/**
 * The dashboard channel (SPEC §5.2): JWT in an httpOnly cookie or `Authorization: Bearer`.
 * NOT BUILT YET — the dashboard channel issue replaces this with real JWT verification. Until
 * then every dashboard-channel request is refused with 401, which is the correct answer for a
 * caller without valid credentials.
 */
export async function authenticateDashboard(_request: FastifyRequest): Promise<Principal> {
  throw AppError.invalidAuth("Missing or invalid dashboard session.");
}
