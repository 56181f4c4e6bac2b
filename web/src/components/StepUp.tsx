import { useCallback, useEffect, useState } from "react";
import { ApiError, post } from "../api/client";
import { useSession } from "../session";
import { CodeField, ConfirmDialog, ErrorNotice } from "./ui";

/**
 * Step-up for sensitive production writes (docs/merchants/authentication.md#step-up-for-production-changes): key pair create and rotate, settings,
 * webhook URL and secret rotate, team changes, 2FA on and off. A screen wraps the write:
 *
 *   const stepUp = useStepUp();
 *   useMutation({ mutationFn: () => stepUp.run((codes) => post(path, { ...body, ...codes })) });
 *   …{stepUp.dialog}
 *
 * In the sandbox the write runs at once (one click). In production a dialog e-mails a code
 * (purpose `sensitive`), asks for it and, when 2FA is on, for the authenticator code, then runs the
 * write with them; a refused code keeps the dialog open. Cancelling rejects with `StepUpCancelled`
 * (ErrorNotice shows nothing for it).
 */

export interface StepUpCodes {
  otp?: string;
  totp?: string;
}

export class StepUpCancelled extends Error {
  constructor() {
    super("Cancelled.");
    this.name = "StepUpCancelled";
  }
}

interface Pending {
  action(codes: StepUpCodes): Promise<unknown>;
  resolve(value: unknown): void;
  reject(error: unknown): void;
}

/**
 * `always`: account-wide writes (2FA on and off, team changes) ask in every environment.
 * `reason`: why the dialog asks (default: live money).
 */
export function useStepUp(options: { always?: boolean; reason?: string } = {}) {
  const { environment, me } = useSession();
  const [pending, setPending] = useState<Pending | null>(null);
  const needed = options.always === true || environment === "production";
  const run = useCallback(
    <T,>(action: (codes: StepUpCodes) => Promise<T>): Promise<T> =>
      needed
        ? new Promise<T>((resolve, reject) =>
            setPending({ action, resolve: resolve as (v: unknown) => void, reject }),
          )
        : action({}),
    [needed],
  );
  const dialog = (
    <StepUpDialog
      pending={pending}
      totp={me?.user.totpEnabled === true}
      reason={options.reason ?? "This change protects your live money"}
      onClose={() => setPending(null)}
    />
  );
  return { run, dialog, needed };
}

function StepUpDialog({
  pending,
  totp,
  reason,
  onClose,
}: {
  pending: Pending | null;
  totp: boolean;
  reason: string;
  onClose(): void;
}) {
  const [sent, setSent] = useState(false);
  const [otp, setOtp] = useState("");
  const [code, setCode] = useState("");
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<unknown>(null);

  // Each request starts afresh (ConfirmDialog opens and closes the native dialog).
  useEffect(() => {
    if (!pending) return;
    setSent(false);
    setOtp("");
    setCode("");
    setError(null);
  }, [pending]);

  const cancel = () => {
    pending?.reject(new StepUpCancelled());
    onClose();
  };
  const requestCode = async () => {
    setBusy(true);
    setError(null);
    try {
      await post("/api/v1/auth/otp", { purpose: "sensitive" });
      setSent(true);
      setOtp("");
    } catch (e) {
      setError(e);
    } finally {
      setBusy(false);
    }
  };
  const confirm = async () => {
    if (!pending) return;
    setBusy(true);
    setError(null);
    try {
      const result = await pending.action({ otp, ...(totp ? { totp: code } : {}) });
      pending.resolve(result);
      onClose();
    } catch (e) {
      const codeRefused =
        e instanceof ApiError &&
        e.status === 400 &&
        e.fields.some((f) => f.field === "otp" || f.field === "totp");
      if (codeRefused) {
        // A wrong authenticator code also spends the e-mailed one: ask for a new mail then.
        if (e.fields.some((f) => f.field === "totp")) setSent(false);
        setCode("");
        setError(e);
      } else {
        pending.reject(e);
        onClose();
      }
    } finally {
      setBusy(false);
    }
  };

  return (
    <ConfirmDialog
      open={pending !== null}
      title="Confirm it's you"
      confirmLabel={sent ? "Confirm" : "E-mail me a code"}
      busy={busy}
      onConfirm={() => void (sent ? confirm() : requestCode())}
      onCancel={cancel}
    >
      <p>
        {reason}, so it needs a one-time code we e-mail you
        {totp ? " and a code from your authenticator app" : ""}.
      </p>
      {sent ? (
        <>
          <p className="hint">We sent a code to your e-mail. It works once, for 10 minutes.</p>
          <CodeField label="E-mailed code" value={otp} onChange={setOtp} />
          {totp ? <CodeField label="Authenticator code" value={code} onChange={setCode} /> : null}
          <button type="button" className="btn btn-small" onClick={() => void requestCode()} disabled={busy}>
            Send a new code
          </button>
        </>
      ) : null}
      <ErrorNotice error={error} />
    </ConfirmDialog>
  );
}
