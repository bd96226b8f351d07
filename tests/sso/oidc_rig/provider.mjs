// A real OpenID provider for the single sign-on tests: npm's oidc-provider (panva, certified), with
// a static client, the development login (any login name; "x@y#unverified" is unverified) and
// knobs the tests turn: POST /__rig/rotate (a new signing key), /__rig/config?expired=1,
// ?nonce=wrong, ?id_token_ttl=N. Copied into var/oidc (where npm installed it) and run there.
// Settings: env vars, or argv `--name=value` (e.g. --port=4010 --client-id=ws1 -> PORT, CLIENT_ID).
import http from 'node:http';
import crypto from 'node:crypto';
import fs from 'node:fs';
import Provider from 'oidc-provider';
// internals (no "exports" map in the package, so deep imports work; pinned to 9.13.x)
import initKeystore from 'oidc-provider/lib/helpers/initialize_keystore.js';
import internals from 'oidc-provider/lib/helpers/weak_cache.js';

for (const a of process.argv.slice(2)) {
  const m = /^--([\w-]+)=(.*)$/s.exec(a);
  if (m) process.env[m[1].toUpperCase().replaceAll('-', '_')] = m[2];
}
const env = process.env;
const PORT = Number(env.PORT || 4010);
const ISSUER = env.ISSUER || `http://127.0.0.1:${PORT}`;
const list = (s) => (s || '').split(/[\s,]+/).filter(Boolean);
const clients = env.CLIENTS_JSON ? JSON.parse(env.CLIENTS_JSON) : [{
  client_id: env.CLIENT_ID || 'test-client',
  client_secret: env.CLIENT_SECRET || 'test-secret',
  redirect_uris: list(env.REDIRECT_URIS || 'http://127.0.0.1:9/cb'),
  grant_types: ['authorization_code'],
  response_types: ['code'],
  token_endpoint_auth_method: env.TOKEN_AUTH_METHOD || 'client_secret_basic',
}];
// mutable test knobs (changeable at runtime via POST /__rig/config?...)
const state = {
  idTokenTtl: Number(env.ID_TOKEN_TTL || 3600), // seconds, must be >= 1
  expired: env.EXPIRED_ID_TOKENS === '1', // issue ID tokens with exp/iat in the past
  nonce: env.FORCE_NONCE || '', // non-empty: put this nonce into ID tokens instead of the real one
  autoConsent: env.AUTO_CONSENT !== '0',
};

let n = 0;
const newKey = () => {
  const { privateKey } = crypto.generateKeyPairSync('rsa', { modulusLength: 2048 });
  return { ...privateKey.export({ format: 'jwk' }), kid: `k${++n}-${crypto.randomBytes(4).toString('hex')}`, alg: 'RS256', use: 'sig' };
};
let signingKeys = env.JWKS_FILE ? JSON.parse(fs.readFileSync(env.JWKS_FILE, 'utf8')).keys : [newKey()];

const provider = new Provider(ISSUER, {
  clients,
  jwks: { keys: signingKeys },
  scopes: ['openid', 'email', 'profile'],
  claims: { openid: ['sub'], email: ['email', 'email_verified'], profile: ['name'] },
  conformIdTokenClaims: false, // put scope-requested claims (email...) into the ID token, not only userinfo
  pkce: { required: () => true }, // only S256 exists in v9
  features: { devInteractions: { enabled: true } },
  ttl: { IdToken: () => state.idTokenTtl },
  // login "bob@x.org" -> sub=email=bob@x.org; "bob@x.org#unverified" -> email_verified=false
  async findAccount(ctx, id) {
    const [email, flag] = id.split('#');
    return { accountId: id, claims: async () => ({ sub: id, email, email_verified: flag !== 'unverified', name: email.split('@')[0] }) };
  },
  // auto-consent: create the grant ourselves so the consent prompt never shows
  async loadExistingGrant(ctx) {
    const grantId = ctx.oidc.result?.consent?.grantId || ctx.oidc.session.grantIdFor(ctx.oidc.client.clientId);
    if (grantId) return ctx.oidc.provider.Grant.find(grantId);
    if (!state.autoConsent || !ctx.oidc.session.accountId) return undefined;
    const grant = new ctx.oidc.provider.Grant({ clientId: ctx.oidc.client.clientId, accountId: ctx.oidc.session.accountId });
    grant.addOIDCScope('openid email profile');
    await grant.save();
    return grant;
  },
});

const origIssue = provider.IdToken.prototype.issue;
provider.IdToken.prototype.issue = function issue(opts = {}) {
  if (opts.use === 'idtoken') {
    const now = Math.floor(Date.now() / 1000);
    if (state.expired) { this.set('iat', now - 7200); opts = { ...opts, expiresAt: now - 3600 }; }
    if (state.nonce) this.set('nonce', state.nonce);
  }
  return origIssue.call(this, opts);
};

function rotate({ keep = true, publish = true } = {}) {
  const k = newKey();
  signingKeys = keep ? [k, ...signingKeys] : [k]; // first key signs
  initKeystore.call(provider, { keys: signingKeys });
  if (!publish) internals(provider).jwks.keys = internals(provider).jwks.keys.filter((x) => x.kid !== k.kid);
  return k.kid;
}

const cb = provider.callback();
http.createServer((req, res) => {
  const u = new URL(req.url, ISSUER);
  if (!u.pathname.startsWith('/__rig/')) return cb(req, res);
  const q = Object.fromEntries(u.searchParams);
  const out = (o) => { res.setHeader('content-type', 'application/json'); res.end(JSON.stringify(o)); };
  if (req.method === 'POST' && u.pathname === '/__rig/rotate') {
    return out({ kid: rotate({ keep: q.keep !== '0', publish: q.publish !== '0' }) });
  }
  if (req.method === 'POST' && u.pathname === '/__rig/config') {
    if (q.id_token_ttl) state.idTokenTtl = Number(q.id_token_ttl);
    if (q.expired) state.expired = q.expired === '1';
    if ('nonce' in q) state.nonce = q.nonce;
    if (q.auto_consent) state.autoConsent = q.auto_consent === '1';
  }
  if (u.pathname === '/__rig/config') return out({ ...state, kids: signingKeys.map((k) => k.kid) });
  res.statusCode = 404; res.end();
}).listen(PORT, '127.0.0.1', () => console.log(`listening on ${ISSUER}`));
