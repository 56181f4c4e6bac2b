import { type ReactNode, type Ref, useEffect, useId, useRef, useState } from "react";
import type { Pagination } from "../api/client";
import type {
  ApiKey,
  CheckoutSession,
  DeliveryStatus,
  Invitation,
  Payout,
  TransactionStatus,
  WithdrawalStatus,
} from "../api/types";
import { explain } from "../lib/errors";
import type { FieldLabels } from "../lib/field-labels";

export function ErrorNotice({
  error,
  context,
  labels,
}: {
  error: unknown;
  context?: "login";
  /** The form's labels of the API's fields (`{ walletAddress: "Recipient wallet address" }`). */
  labels?: FieldLabels;
}) {
  // A step-up dialog the user cancelled is no error to show.
  if (!error || (error instanceof Error && error.name === "StepUpCancelled")) return null;
  const e = explain(error, context, labels);
  return (
    <div className="notice notice-error" role="alert">
      <p className="notice-title">{e.title}</p>
      {e.detail ? <p>{e.detail}</p> : null}
      {e.fields.length > 0 ? (
        <ul>
          {e.fields.map((f) => (
            <li key={`${f.label}:${f.message}`}>
              <strong>{f.label}</strong> {f.message}
            </li>
          ))}
        </ul>
      ) : null}
    </div>
  );
}

export function Loading({ label = "Loading…" }: { label?: string }) {
  return (
    <p className="loading" role="status" aria-live="polite">
      <span className="spinner" aria-hidden="true" /> {label}
    </p>
  );
}

export function Empty({ title, children }: { title: string; children?: ReactNode }) {
  return (
    <div className="empty">
      <p className="empty-title">{title}</p>
      {children}
    </div>
  );
}

export function Notice({
  kind = "info",
  children,
}: {
  kind?: "info" | "success" | "warning";
  children: ReactNode;
}) {
  return (
    <div className={`notice notice-${kind}`} role={kind === "success" ? "status" : undefined}>
      {children}
    </div>
  );
}

/** Every status a badge shows: of transactions, sessions, payouts, withdrawals, webhooks, keys, invitations. */
type Status =
  | TransactionStatus
  | CheckoutSession["status"]
  | Payout["status"]
  | WithdrawalStatus
  | DeliveryStatus
  | ApiKey["status"]
  | Invitation["status"];

const STATUS_TONE = {
  confirmed: "good",
  completed: "good",
  delivered: "good",
  active: "good",
  accepted: "good",
  pending: "wait",
  processing: "wait",
  failed: "bad",
  rejected: "bad",
  // A deposit from a frozen or refused sender waits for the owner's decision.
  held: "wait",
  returned: "muted",
  revoked: "muted",
  expired: "muted",
} satisfies Record<Status, "good" | "wait" | "bad" | "muted">;

export function StatusBadge({ status }: { status: Status }) {
  return <span className={`badge badge-${STATUS_TONE[status] ?? "muted"}`}>{status}</span>;
}

export function PageHeader({ title, children }: { title: string; children?: ReactNode }) {
  useEffect(() => {
    document.title = `${title} · stablegate`;
  }, [title]);
  return (
    <div className="page-header">
      <h1 tabIndex={-1} id="page-title">
        {title}
      </h1>
      {children ? <div className="page-actions">{children}</div> : null}
    </div>
  );
}

export function Pager({
  pagination,
  onPage,
}: {
  pagination: Pagination | undefined;
  onPage(page: number): void;
}) {
  if (!pagination || pagination.totalPages <= 1) return null;
  const { page, totalPages, total } = pagination;
  return (
    <nav className="pager" aria-label="Pagination">
      <button type="button" className="btn" disabled={page <= 1} onClick={() => onPage(page - 1)}>
        ← Previous
      </button>
      <span>
        Page {page} of {totalPages} · {total} in all
      </span>
      <button type="button" className="btn" disabled={page >= totalPages} onClick={() => onPage(page + 1)}>
        Next →
      </button>
    </nav>
  );
}

export function CopyButton({ value, label = "Copy" }: { value: string; label?: string }) {
  const [done, setDone] = useState(false);
  return (
    <button
      type="button"
      className="btn btn-small"
      onClick={async () => {
        try {
          await navigator.clipboard.writeText(value);
          setDone(true);
          setTimeout(() => setDone(false), 1500);
        } catch {
          setDone(false);
        }
      }}
    >
      {done ? "Copied" : label}
    </button>
  );
}

/** A secret shown this once (API key pair, webhook secret): copy it now, it cannot be read again. */
export function RevealOnce({
  title,
  items,
  onDone,
}: {
  title: string;
  items: { label: string; value: string }[];
  onDone(): void;
}) {
  const ref = useRef<HTMLElement>(null);
  useEffect(() => ref.current?.focus(), []);
  return (
    <section className="reveal" ref={ref} tabIndex={-1} aria-labelledby="reveal-title">
      <h2 id="reveal-title">{title}</h2>
      <p className="reveal-warning">
        Copy {items.length > 1 ? "these values" : "this value"} now and keep{" "}
        {items.length > 1 ? "them" : "it"} in your server's secret store. For your safety we can't show{" "}
        {items.length > 1 ? "them" : "it"} again.
      </p>
      <dl>
        {items.map((i) => (
          <div key={i.label} className="reveal-item">
            <dt>{i.label}</dt>
            <dd>
              <code data-testid={`reveal-${i.label}`}>{i.value}</code> <CopyButton value={i.value} />
            </dd>
          </div>
        ))}
      </dl>
      <button type="button" className="btn btn-primary" onClick={onDone}>
        I've saved {items.length > 1 ? "them" : "it"}
      </button>
    </section>
  );
}

/**
 * A modal confirmation on the native <dialog> (focus moves in and is kept there, Escape cancels,
 * focus returns to the button that opened it).
 */
export function ConfirmDialog({
  open,
  title,
  children,
  confirmLabel,
  danger,
  busy,
  onConfirm,
  onCancel,
}: {
  open: boolean;
  title: string;
  children?: ReactNode;
  confirmLabel: string;
  danger?: boolean;
  busy?: boolean;
  onConfirm(): void;
  onCancel(): void;
}) {
  const ref = useRef<HTMLDialogElement>(null);
  const titleId = useId();
  useEffect(() => {
    const d = ref.current;
    if (!d) return;
    if (open && !d.open) d.showModal();
    if (!open && d.open) d.close();
  }, [open]);
  return (
    <dialog
      ref={ref}
      className="dialog"
      aria-labelledby={titleId}
      onCancel={(e) => {
        e.preventDefault();
        onCancel();
      }}
    >
      <form
        method="dialog"
        onSubmit={(e) => {
          e.preventDefault();
          onConfirm();
        }}
      >
        <h2 id={titleId}>{title}</h2>
        <div className="dialog-body">{children}</div>
        <div className="dialog-actions">
          <button type="button" className="btn" onClick={onCancel}>
            Cancel
          </button>
          <button type="submit" className={danger ? "btn btn-danger" : "btn btn-primary"} disabled={busy}>
            {busy ? "Working…" : confirmLabel}
          </button>
        </div>
      </form>
    </dialog>
  );
}

/** The attributes every six-digit code input shares: e-mailed OTPs and authenticator codes. */
export const SIX_DIGIT_CODE = {
  inputMode: "numeric",
  autoComplete: "one-time-code",
  pattern: "[0-9]{6}",
  maxLength: 6,
  required: true,
} as const;

/**
 * A labelled six-digit code input (an e-mailed OTP or an authenticator code): the shared
 * attributes, the hint wired to `aria-describedby`, and the typed value trimmed.
 */
export function CodeField({
  label,
  hint,
  value,
  onChange,
  inputRef,
}: {
  label: string;
  hint?: ReactNode;
  value: string;
  onChange: (value: string) => void;
  inputRef?: Ref<HTMLInputElement>;
}) {
  return (
    <Field label={label} hint={hint}>
      {(id, describedBy) => (
        <input
          id={id}
          {...SIX_DIGIT_CODE}
          ref={inputRef}
          aria-describedby={describedBy}
          value={value}
          onChange={(e) => onChange(e.target.value.trim())}
        />
      )}
    </Field>
  );
}

export function Field({
  label,
  hint,
  error,
  children,
}: {
  label: string;
  hint?: ReactNode;
  /** What is wrong with the value, checked in the form (shown under the field, announced). */
  error?: ReactNode;
  children: (id: string, describedBy: string | undefined) => ReactNode;
}) {
  const id = useId();
  const hintId = hint ? `${id}-hint` : undefined;
  const errorId = error ? `${id}-error` : undefined;
  const describedBy = [errorId, hintId].filter(Boolean).join(" ") || undefined;
  return (
    <div className={error ? "field has-error" : "field"}>
      <label htmlFor={id}>{label}</label>
      {children(id, describedBy)}
      {error ? (
        <p className="field-error" id={errorId} role="alert">
          {error}
        </p>
      ) : null}
      {hint ? (
        <p className="hint" id={hintId}>
          {hint}
        </p>
      ) : null}
    </div>
  );
}
