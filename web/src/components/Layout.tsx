import { useQuery } from "@tanstack/react-query";
import { type ReactNode, Suspense, useEffect, useRef, useState } from "react";
import { NavLink, useLocation, useNavigate } from "react-router-dom";
import { type Environment, isMissingRoute, post, request } from "../api/client";
import { visibleNav } from "../lib/permissions";
import { ENVIRONMENTS, useSession } from "../session";
import { Loading } from "./ui";

/** The development outbox exists outside production mode only (404 there). */
function useHasOutbox() {
  const q = useQuery({
    queryKey: ["outbox-available"],
    queryFn: async () => {
      try {
        await request("/api/v1/dashboard/dev/mail", { query: { limit: 1 } });
        return true;
      } catch (e) {
        if (isMissingRoute(e) || (e as { code?: string }).code === "NOT_FOUND") return false;
        return false;
      }
    },
    staleTime: Number.POSITIVE_INFINITY,
  });
  return q.data === true;
}

export function EnvironmentSwitch() {
  const { environment, setEnvironment } = useSession();
  const options = Object.entries(ENVIRONMENTS).map(([value, label]) => ({
    value: value as Environment,
    label,
  }));
  return (
    <fieldset className={`env-switch env-${environment}`}>
      <legend className="visually-hidden">Environment</legend>
      {options.map((o) => (
        <label key={o.value} className={environment === o.value ? "env-option is-active" : "env-option"}>
          <input
            type="radio"
            name="environment"
            value={o.value}
            checked={environment === o.value}
            onChange={() => setEnvironment(o.value)}
          />
          {o.label}
        </label>
      ))}
    </fieldset>
  );
}

export function Layout({ children }: { children: ReactNode }) {
  const { me, environment, signedOut } = useSession();
  const hasOutbox = useHasOutbox();
  const [menuOpen, setMenuOpen] = useState(false);
  const location = useLocation();
  const navigate = useNavigate();

  // A new screen: close the mobile menu and move focus to its heading (screen readers announce it).
  const shownPath = useRef(location.pathname);
  useEffect(() => {
    if (shownPath.current === location.pathname) return;
    shownPath.current = location.pathname;
    setMenuOpen(false);
    (document.getElementById("page-title") ?? document.getElementById("main"))?.focus({
      preventScroll: true,
    });
  }, [location.pathname]);

  async function signOut() {
    try {
      await post("/api/v1/auth/logout");
    } finally {
      signedOut();
      navigate("/login");
    }
  }

  return (
    <div className={`shell shell-${environment}`}>
      <a className="skip-link" href="#main">
        Skip to content
      </a>
      {environment === "sandbox" ? (
        <div className="sandbox-banner" role="note">
          <strong>Sandbox</strong> — test data and simulated blockchains. No real money moves here.
        </div>
      ) : null}
      <header className="topbar">
        <button
          type="button"
          className="btn menu-button"
          aria-expanded={menuOpen}
          aria-controls="main-nav"
          onClick={() => setMenuOpen((v) => !v)}
        >
          Menu
        </button>
        <NavLink to="/" className="brand" aria-label="stablegate overview">
          stablegate
        </NavLink>
        <EnvironmentSwitch />
        <div className="account">
          <span className="account-name" title={me?.user.email}>
            {me?.user.companyName ?? me?.user.email}
          </span>
          <button type="button" className="btn btn-small" onClick={signOut}>
            Sign out
          </button>
        </div>
      </header>
      <div className="body">
        <nav id="main-nav" className={menuOpen ? "sidenav is-open" : "sidenav"} aria-label="Main">
          <ul>
            {visibleNav(me?.permissions, { hasOutbox }).map((n) => (
              <li key={n.to}>
                <NavLink to={n.to} end={n.to === "/"}>
                  {n.label}
                </NavLink>
              </li>
            ))}
          </ul>
        </nav>
        <main id="main" tabIndex={-1}>
          <Suspense fallback={<Loading />}>{children}</Suspense>
        </main>
      </div>
    </div>
  );
}
