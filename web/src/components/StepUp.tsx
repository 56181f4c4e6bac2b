import { useCallback, useEffect, useId, useRef, useState } from "react";
import { ApiError, post } from "../api/client";
import { useSession } from "../session";
import { ErrorNotice, Field, SIX_DIGIT_CODE } from "./ui";

/**
 * Step-up for sensitive production writes (CONTRACT §6.1): key pair create and rotate, settings,
 * webhook URL and secret rotate, 2FA off. A screen wraps the write:
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

/** `always`: account-wide writes (2FA off) ask in every environment. */
export function useStepUp(options: { always?: boolean } = {}) {
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
    <StepUpDialog pending={pending} totp={me?.user.totpEnabled === true} onClose={() => setPending(null)} />
  );
  return { run, dialog, needed };
}

function StepUpDialog({
  pending,
  totp,
  onClose,
}: {
  pending: Pending | null;
  totp: boolean;
  onClose(): void;
}) {
  const ref = useRef<HTMLDialogElement>(null);
  const titleId = useId();
  const [sent, setSent] = useState(false);
  const [otp, setOtp] = useState("");
  const [code, setCode] = useState("");
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<unknown>(null);

  useEffect(() => {
    const d = ref.current;
    if (!d) return;
    if (pending && !d.open) {
      setSent(false);
      setOtp("");
      setCode("");
      setError(null);
      d.showModal();
    }
    if (!pending && d.open) d.close();
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
    <dialog
      ref={ref}
      className="dialog"
      aria-labelledby={titleId}
      onCancel={(e) => {
        e.preventDefault();
        cancel();
      }}
    >
      <form
        method="dialog"
        onSubmit={(e) => {
          e.preventDefault();
          if (sent) void confirm();
          else void requestCode();
        }}
      >
        <h2 id={titleId}>Confirm it's you</h2>
        <div className="dialog-body">
          <p>
            This change protects your live money, so it needs a one-time code we e-mail you
            {totp ? " and a code from your authenticator app" : ""}.
          </p>
          {sent ? (
            <>
              <p className="hint">We sent a code to your e-mail. It works once, for 10 minutes.</p>
              <Field label="E-mailed code">
                {(id) => (
                  <input
                    id={id}
                    {...SIX_DIGIT_CODE}
                    value={otp}
                    onChange={(e) => setOtp(e.target.value.trim())}
                  />
                )}
              </Field>
              {totp ? (
                <Field label="Authenticator code">
                  {(id) => (
                    <input
                      id={id}
                      {...SIX_DIGIT_CODE}
                      value={code}
                      onChange={(e) => setCode(e.target.value.trim())}
                    />
                  )}
                </Field>
              ) : null}
              <button
                type="button"
                className="btn btn-small"
                onClick={() => void requestCode()}
                disabled={busy}
              >
                Send a new code
              </button>
            </>
          ) : null}
          <ErrorNotice error={error} />
        </div>
        <div className="dialog-actions">
          <button type="button" className="btn" onClick={cancel}>
            Cancel
          </button>
          <button type="submit" className="btn btn-primary" disabled={busy}>
            {busy ? "Working…" : sent ? "Confirm" : "E-mail me a code"}
          </button>
        </div>
      </form>
    </dialog>
  );
}
