import { ApiError } from "../api/client";
import { type FieldLabels, fieldLabel, fieldMessage } from "./field-labels";

export interface Explained {
  title: string;
  detail?: string;
  fields: { label: string; message: string }[];
}

/**
 * An API error in words a merchant understands (issue #10): a plain headline per error code, the
 * server's own sentence when it adds something, and each invalid field by its label (the form's own
 * `labels` first, issue #35), its message without the API's field name.
 */
export function explain(error: unknown, context?: "login", labels?: FieldLabels): Explained {
  if (!(error instanceof ApiError)) {
    return { title: "Something went wrong in the dashboard. Reload the page and try again.", fields: [] };
  }
  const fields = error.fields.map((f) => ({
    label: fieldLabel(f.field, labels),
    message: fieldMessage(f.field, f.message, labels),
  }));
  const server = error.message;
  switch (error.code) {
    case "NETWORK":
      return { title: "We can't reach stablegate. Check your connection and try again.", fields };
    case "RATE_LIMITED":
      if (context === "login")
        return {
          title: `Too many failed sign-ins from your network. Please wait ${error.retryAfter ?? 60} seconds, or reset your password.`,
          fields,
        };
      return {
        title: `Too many requests in a short time. Please wait ${error.retryAfter ?? 60} seconds and try again.`,
        fields,
      };
    case "VALIDATION_ERROR":
      return { title: "Some details need fixing.", detail: fields.length ? undefined : server, fields };
    case "INVALID_AUTH":
      if (context === "login") {
        if (error.details.totpRequired)
          return { title: "Enter the 6-digit code from your authenticator app.", detail: server, fields };
        return {
          title: "That e-mail and password don't match an account.",
          fields,
        };
      }
      return { title: "Your session has ended. Please sign in again.", fields };
    case "FORBIDDEN":
      return { title: "You're not allowed to do this.", detail: server, fields };
    case "NOT_FOUND":
      if (server.startsWith("No route "))
        return { title: "This feature isn't available on this stablegate server yet.", fields };
      return {
        title: "We couldn't find that. It may belong to the other environment.",
        detail: server,
        fields,
      };
    case "INVALID_STATE":
      return { title: "This can't be done right now.", detail: server, fields };
    case "INSUFFICIENT_BALANCE":
      return {
        title: "Your available balance is too low for this amount.",
        detail: "Funds held for pending withdrawals and payouts can't be spent.",
        fields,
      };
    case "IDEMPOTENCY_CONFLICT":
    case "IDEMPOTENCY_MISMATCH":
      return {
        title: "This request is already being processed. Wait a moment and check the result.",
        fields,
      };
    case "CHAIN_UNAVAILABLE":
      return {
        title:
          "The blockchain network isn't reachable right now, so nothing was sent. Please try again later.",
        detail: server,
        fields,
      };
    default:
      return {
        title: "Something went wrong on our side. Please try again in a moment.",
        detail: error.requestId
          ? `If it keeps happening, contact support with reference ${error.requestId}.`
          : undefined,
        fields,
      };
  }
}
