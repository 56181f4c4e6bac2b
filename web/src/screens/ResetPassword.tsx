import { useMutation } from "@tanstack/react-query";
import { useEffect, useState } from "react";
import { Link, useLocation, useNavigate } from "react-router-dom";
import { post } from "../api/client";
import { Form, FormError, SubmitButton } from "../components/Form";
import { Field, Notice, PageHeader } from "../components/ui";

/**
 * The e-mailed link is `/reset-password#token=…`: the fragment never leaves the browser (no server
 * log, no Referer). The token is read once, then dropped from the address bar and the history
 * entry, and travels only in the POST body.
 */
export default function ResetPassword() {
  const location = useLocation();
  const navigate = useNavigate();
  const [token] = useState(() => new URLSearchParams(location.hash.slice(1)).get("token") ?? "");
  useEffect(() => {
    if (location.hash) navigate({ pathname: location.pathname, search: location.search }, { replace: true });
  }, [location.hash, location.pathname, location.search, navigate]);
  const [password, setPassword] = useState("");
  const reset = useMutation({
    mutationFn: () => post("/api/v1/auth/password/reset", { token, newPassword: password }),
  });
  return (
    <div className="guest">
      <section className="card auth-card" aria-labelledby="page-title">
        <PageHeader title="Choose a new password" />
        {!token ? (
          <Notice kind="warning">This link is incomplete. Open the link from the e-mail again.</Notice>
        ) : reset.isSuccess ? (
          <Notice kind="success">
            Your password is changed and every session has ended. <Link to="/login">Sign in</Link> with the
            new one.
          </Notice>
        ) : (
          <Form submission={reset} onSubmit={() => reset.mutate()}>
            <Field label="New password" hint="At least 10 characters.">
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
            <FormError />
            <SubmitButton className="btn btn-primary btn-block">Set new password</SubmitButton>
          </Form>
        )}
      </section>
    </div>
  );
}
