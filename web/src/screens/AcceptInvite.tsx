import { useMutation } from "@tanstack/react-query";
import { useEffect, useState } from "react";
import { Link, useLocation, useNavigate } from "react-router-dom";
import { post } from "../api/client";
import type { User } from "../api/types";
import { Form, FormError, SubmitButton } from "../components/Form";
import { Field, Notice, PageHeader } from "../components/ui";
import { useSession } from "../session";

/**
 * Team accounts (issue #21): the invitation mail links to `/accept-invite#token=inv_…`. As with the
 * password reset, the token rides in the fragment (never sent to a server, no Referer), is read
 * once, dropped from the address bar, and travels only in the POST body. The invitee chooses a
 * password, joins the team with the invited role and lands signed in on the overview.
 */
export default function AcceptInvite() {
  const location = useLocation();
  const navigate = useNavigate();
  const { signedIn, signedOut } = useSession();
  const [token] = useState(() => new URLSearchParams(location.hash.slice(1)).get("token") ?? "");
  useEffect(() => {
    if (location.hash) navigate({ pathname: location.pathname, search: location.search }, { replace: true });
  }, [location.hash, location.pathname, location.search, navigate]);
  const [password, setPassword] = useState("");
  const [confirm, setConfirm] = useState("");
  const [mismatch, setMismatch] = useState(false);
  const accept = useMutation({
    mutationFn: () => post<{ user: User }>("/api/v1/auth/invitations/accept", { token, password }),
    onSuccess: async () => {
      // A browser signed in as someone else is now the new member: nothing of the other login stays.
      signedOut();
      await signedIn();
      navigate("/", { replace: true });
    },
  });
  return (
    <div className="guest">
      <section className="card auth-card" aria-labelledby="page-title">
        <p className="brand brand-large">stablegate</p>
        <PageHeader title="Join your team" />
        {!token ? (
          <Notice kind="warning">
            This link is incomplete. Open the link from the invitation e-mail again, or ask for a new
            invitation.
          </Notice>
        ) : (
          <Form
            submission={accept}
            onSubmit={() => {
              const differ = password !== confirm;
              setMismatch(differ);
              if (!differ) accept.mutate();
            }}
          >
            <p>
              You were invited to a stablegate account. Choose a password: you sign in with the e-mail address
              the invitation was sent to.
            </p>
            <Field label="Password" hint="At least 10 characters.">
              {(id, hint) => (
                <input
                  id={id}
                  type="password"
                  minLength={10}
                  required
                  autoComplete="new-password"
                  aria-describedby={hint}
                  value={password}
                  onChange={(e) => setPassword(e.target.value)}
                />
              )}
            </Field>
            <Field label="Confirm password">
              {(id) => (
                <input
                  id={id}
                  type="password"
                  minLength={10}
                  required
                  autoComplete="new-password"
                  aria-invalid={mismatch || undefined}
                  value={confirm}
                  onChange={(e) => setConfirm(e.target.value)}
                />
              )}
            </Field>
            {mismatch ? (
              <div className="notice notice-error" role="alert">
                <p className="notice-title">The two passwords don't match.</p>
              </div>
            ) : null}
            <FormError />
            <SubmitButton className="btn btn-primary btn-block" pendingLabel="Joining…">
              Join and sign in
            </SubmitButton>
          </Form>
        )}
        <p className="auth-links">
          Already have a login? <Link to="/login">Sign in</Link>
        </p>
      </section>
    </div>
  );
}
