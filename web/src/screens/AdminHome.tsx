import { useNavigate } from "react-router-dom";
import { post } from "../api/client";
import { Notice } from "../components/ui";
import { useSession } from "../session";

/** Admin accounts are read-only operators: their views are the /api/v1/admin/* API, not this dashboard. */
export default function AdminHome() {
  const { me, signedOut } = useSession();
  const navigate = useNavigate();
  return (
    <div className="guest">
      <section className="card auth-card">
        <h1>Operator account</h1>
        <Notice>
          {me?.user.email} is a platform admin. Admin access is read-only and uses the{" "}
          <code>/api/v1/admin/*</code> API (merchants, transactions); the merchant dashboard needs a merchant
          account.
        </Notice>
        <button
          type="button"
          className="btn"
          onClick={async () => {
            await post("/api/v1/auth/logout").catch(() => undefined);
            signedOut();
            navigate("/login");
          }}
        >
          Sign out
        </button>
      </section>
    </div>
  );
}
