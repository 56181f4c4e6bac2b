#!/usr/bin/env bash
# Prepares compose.yaml's secrets, once (deploy/README.md#production-on-one-host):
#
#   ./init.sh              secrets, the mnemonic, MASTER_XPUBS, then each role's database login
#   ./init.sh --no-db-roles   the same without the database logins (every role uses the owner's)
#
# Writes only what is missing in $STABLEGATE_SECRETS (default ./secrets; mode 0700, files 0600):
#   postgres_password   the database owner's password (PostgreSQL reads it as a secret file)
#   mnemonic            24 words, generated in the stablegate image (@scure/bip39); the signer's only
#   xpubs.env           MASTER_XPUBS, printed by `signer export-xpubs` from the mnemonic
#   service.env         SECRET_ENCRYPTION_KEY, JWT_SECRET, METRICS_TOKEN (api, worker, cli)
#   internal.env        INTERNAL_SHARED_SECRET (worker, signer)
#   owner.env           the owner's DATABASE_URL (migrate, cli)
#   api.env, worker.env, signer.env   each role's DATABASE_URL: its own least-privilege login,
#                       created by `stablegate db roles` after the first migration
#   config.env          settings for every stablegate service (chains, mail, …): yours to edit
#
# The tools: ENGINE (docker or podman; found on PATH), COMPOSE (default: "docker compose",
# "podman compose" or podman-compose, whichever works), STABLEGATE_IMAGE (default stablegate:local).
set -euo pipefail
cd "$(dirname "$0")"

db_roles=1
case "${1:-}" in
"") ;;
--no-db-roles) db_roles=0 ;;
-h | --help)
  sed -n '2,22p' "$0" | sed 's/^# \{0,1\}//'
  exit 0
  ;;
*)
  echo "init.sh: unknown option $1 (--no-db-roles, --help)" >&2
  exit 2
  ;;
esac

say() { echo "init.sh: $*"; }
die() {
  echo "init.sh: $*" >&2
  exit 1
}

ENGINE=${ENGINE:-$(command -v docker >/dev/null 2>&1 && docker info >/dev/null 2>&1 && echo docker || echo podman)}
command -v "$ENGINE" >/dev/null || die "neither docker nor podman is on PATH (set ENGINE)"
if [ -z "${COMPOSE:-}" ]; then
  if $ENGINE compose version >/dev/null 2>&1; then
    COMPOSE="$ENGINE compose"
  elif command -v podman-compose >/dev/null; then
    COMPOSE=podman-compose
  elif command -v docker-compose >/dev/null; then
    COMPOSE=docker-compose
  else
    die "no compose tool found (set COMPOSE)"
  fi
fi
IMAGE=${STABLEGATE_IMAGE:-stablegate:local}
SECRETS=${STABLEGATE_SECRETS:-./secrets}
$ENGINE image inspect "$IMAGE" >/dev/null 2>&1 ||
  die "image $IMAGE not found: build it first (from the repository root: $ENGINE build -f Containerfile -t $IMAGE .)"

umask 077
mkdir -p "$SECRETS"
chmod 0700 "$SECRETS"
SECRETS=$(cd "$SECRETS" && pwd)

hex() { od -An -tx1 -N"$1" /dev/urandom | tr -d ' \n'; }
# Writes $1 from stdin unless it exists.
create() {
  if [ -e "$SECRETS/$1" ]; then
    cat >/dev/null
    say "kept $1"
    return
  fi
  cat >"$SECRETS/$1.tmp"
  mv "$SECRETS/$1.tmp" "$SECRETS/$1"
  say "wrote $1"
}
# The file $1 readable by the image's user (uid 1000) only, as the signer requires of its mnemonic.
give_to_image_user() {
  if [ "$(id -u)" = 0 ]; then
    chown 1000:1000 "$1"
  elif [ "$ENGINE" = podman ]; then
    podman unshare chown 1000:1000 "$1"
  else
    die "run as root (or with rootless podman) so that $1 can be given to uid 1000, the image's user"
  fi
  chmod 0400 "$1"
}

create postgres_password < <(hex 32)
password=$(cat "$SECRETS/postgres_password")
owner_url="postgres://stablegate:${password}@postgres:5432/stablegate"
create owner.env < <(echo "DATABASE_URL=$owner_url")
for role in api worker signer; do
  create "$role.env" < <(echo "DATABASE_URL=$owner_url")
done
create service.env < <(printf 'SECRET_ENCRYPTION_KEY=%s\nJWT_SECRET=%s\nMETRICS_TOKEN=%s\n' "$(hex 32)" "$(hex 32)" "$(hex 24)")
create internal.env < <(printf 'INTERNAL_SHARED_SECRET=%s\n' "$(hex 32)")
create config.env <<'EOF'
# Settings for every stablegate service of compose.yaml (README.md#configuration). For example:
# CURRENCY_TYPES=USDT-TRC20,USDT-ERC20
# ERC20_RPC_URLS=https://…,https://…
# TRC20_API_URLS=https://…
# SMTP_URL=smtp://user:password@mail.example.com:587
EOF

# The mnemonic: made by the image's own BIP39 library, in a container without network.
if [ ! -e "$SECRETS/mnemonic" ]; then
  $ENGINE run --rm --network none --entrypoint node "$IMAGE" --input-type=module -e '
    import { generateMnemonic } from "@scure/bip39";
    import { wordlist } from "@scure/bip39/wordlists/english.js";
    console.log(generateMnemonic(wordlist, 256));' >"$SECRETS/mnemonic.tmp"
  [ "$(wc -w <"$SECRETS/mnemonic.tmp")" = 24 ] || die "the image did not print a 24-word mnemonic"
  mv "$SECRETS/mnemonic.tmp" "$SECRETS/mnemonic"
  say "wrote mnemonic (write it down and keep it offline: it controls every address)"
else
  say "kept mnemonic"
fi
give_to_image_user "$SECRETS/mnemonic"

if [ ! -e "$SECRETS/xpubs.env" ]; then
  $ENGINE run --rm --network none -e NODE_ENV=production -e MASTER_MNEMONIC_FILE=/run/secrets/mnemonic \
    -v "$SECRETS/mnemonic:/run/secrets/mnemonic:ro" "$IMAGE" signer export-xpubs >"$SECRETS/xpubs.env.tmp"
  grep -q '^MASTER_XPUBS=' "$SECRETS/xpubs.env.tmp" || die "signer export-xpubs printed no MASTER_XPUBS line"
  mv "$SECRETS/xpubs.env.tmp" "$SECRETS/xpubs.env"
  say "wrote xpubs.env"
else
  say "kept xpubs.env"
fi

# Each role's own database login (README.md#production-database-roles): the database must be up
# and migrated first. Done once; `db roles --rotate-passwords` by hand for new passwords.
if [ "$db_roles" = 1 ] && [ ! -e "$SECRETS/.db-roles" ]; then
  say "starting PostgreSQL and migrating, for the database logins"
  $COMPOSE up -d postgres
  for _ in $(seq 1 60); do
    $COMPOSE exec -T postgres pg_isready -q -h 127.0.0.1 -U stablegate -d stablegate 2>/dev/null && break
    sleep 2
  done
  $COMPOSE run --rm -T migrate
  out=$($COMPOSE run --rm -T cli db roles) || die "stablegate db roles failed: $out"
  for role in api worker signer; do
    url=$(printf '%s\n' "$out" | awk -v r="$role:" '$1 == r { found = 1; next } found && /DATABASE_URL=/ { sub(/^ *DATABASE_URL=/, ""); print; exit }')
    case $url in
    postgres*://*:*@*) ;;
    *) die "db roles printed no DATABASE_URL with a password for $role (did the login exist already? then: run --rm cli db roles --rotate-passwords)" ;;
    esac
    echo "DATABASE_URL=$url" >"$SECRETS/$role.env.tmp"
    mv "$SECRETS/$role.env.tmp" "$SECRETS/$role.env"
    say "wrote $role.env (its own login)"
  done
  touch "$SECRETS/.db-roles"
fi
say "done: now $COMPOSE up -d"
