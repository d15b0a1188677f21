// A real authorization server for the resource-server tests: oidc-provider (OpenID Certified),
// on 127.0.0.1 at a free port, issuing RFC 9068 JWT access tokens for any 127.0.0.1 resource
// (resource indicators), opaque ones to the client `svc-opaque` (introspectable by `rs`).
//
//   node authorization_server.mjs
//
// Prints one JSON line when listening: {"issuer": "http://127.0.0.1:PORT"}. Then:
// - client credentials: `svc:svc-secret` (scopes mcp:tools mcp:read), `svc-narrow:svc-secret`
//   (mcp:read only), `svc-opaque:svc-secret` (opaque tokens);
// - the authorization code grant with PKCE for the public client `app` (redirects to any
//   http://127.0.0.1 port) or a dynamically registered one (/reg), through the built-in
//   login pages (any login, any password);
// - introspection by the confidential client `rs:rs-secret`;
// - POST /rotate: a new signing key takes over (the old one stays published, so tokens it
//   signed stay good); answers {"kid": NEW}.
import http from 'node:http';
import { generateKeyPairSync, randomUUID } from 'node:crypto';
import Provider, { errors } from 'oidc-provider';

const SCOPES = 'mcp:tools mcp:read';

function newKey() {
  const { privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
  return { ...privateKey.export({ format: 'jwk' }), kid: randomUUID(), alg: 'RS256', use: 'sig' };
}

function isLoopbackResource(resource) {
  try {
    const url = new URL(resource);
    return url.protocol === 'http:' && url.hostname === '127.0.0.1';
  } catch {
    return false;
  }
}

function provider(issuer, keys) {
  const secret = 'svc-secret';
  const service = (id, scope) => ({
    client_id: id, client_secret: secret, grant_types: ['client_credentials'],
    response_types: [], redirect_uris: [], scope,
  });
  return new Provider(issuer, {
    jwks: { keys },
    clients: [
      service('svc', SCOPES), service('svc-narrow', 'mcp:read'), service('svc-opaque', SCOPES),
      { client_id: 'rs', client_secret: 'rs-secret', grant_types: [], response_types: [],
        redirect_uris: [] },
      // A native app: any loopback port for its redirect (RFC 8252 section 7.3).
      { client_id: 'app', token_endpoint_auth_method: 'none', application_type: 'native',
        grant_types: ['authorization_code', 'refresh_token'], response_types: ['code'],
        redirect_uris: ['http://127.0.0.1/callback'], scope: `openid offline_access ${SCOPES}` },
    ],
    scopes: ['openid', 'offline_access', 'mcp:tools', 'mcp:read'],
    pkce: { required: () => true },
    clientBasedCORS: () => true,
    features: {
      devInteractions: { enabled: true },
      clientCredentials: { enabled: true },
      introspection: { enabled: true },
      revocation: { enabled: true },
      registration: { enabled: true },
      resourceIndicators: {
        enabled: true,
        defaultResource: () => undefined,
        useGrantedResource: () => true,
        getResourceServerInfo: (ctx, resource, client) => {
          if (!isLoopbackResource(resource)) throw new errors.InvalidTarget();
          const opaque = client?.clientId === 'svc-opaque';
          return {
            scope: SCOPES, audience: resource, accessTokenTTL: 3600,
            accessTokenFormat: opaque ? 'opaque' : 'jwt',
            ...(opaque ? {} : { jwt: { sign: { alg: 'RS256' } } }),
          };
        },
      },
    },
  });
}

let keys = [newKey()];
const server = http.createServer();
server.listen(0, '127.0.0.1', () => {
  const issuer = `http://127.0.0.1:${server.address().port}`;
  let current = provider(issuer, keys);
  let handler = current.callback();
  server.on('request', (req, res) => {
    if (req.method === 'POST' && req.url === '/rotate') {
      keys = [newKey(), ...keys];
      current = provider(issuer, keys);
      handler = current.callback();
      res.setHeader('content-type', 'application/json');
      res.end(JSON.stringify({ kid: keys[0].kid }));
      return;
    }
    handler(req, res);
  });
  process.stdout.write(`${JSON.stringify({ issuer })}\n`);
});
