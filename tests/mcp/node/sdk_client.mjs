// An MCP client on the official TypeScript SDK (@modelcontextprotocol/sdk), connecting the way
// an app with a "Connect" button does: its own OAuthClientProvider and the SDK's auth().
//
//   node sdk_client.mjs PREFIX STATE_FILE SERVER_URL REDIRECT_URI start
//   node sdk_client.mjs PREFIX STATE_FILE SERVER_URL REDIRECT_URI finish CALLBACK_URL
//
// PREFIX is where scripts/install_node_clients.sh installed the SDK. Everything the provider
// keeps (client registration, PKCE verifier, state, tokens) lives in STATE_FILE between the two
// runs, as an app keeps it while the person is away in the browser.
//
// `start` calls auth() with the resource metadata and scope the server's 401 names, as the
// SDK's transport does on a 401; auth() registers the app and hands the authorization URL to
// redirectToAuthorization, which prints `AUTHORIZATION_URL <url>`; then `RESULT REDIRECT`.
// `finish` takes the URL the browser was sent back to, checks its state, calls
// auth(provider, {serverUrl, authorizationCode}) (`RESULT AUTHORIZED`), then lists the tools with
// Client + StreamableHTTPClientTransport on the same provider: `TOOLS ["name", ...]`.

import { randomBytes } from "node:crypto";
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { join } from "node:path";

const [prefix, stateFile, serverUrl, redirectUri, mode, callbackUrl] = process.argv.slice(2);
const require = createRequire(join(prefix, "package.json"));
const { auth, extractWWWAuthenticateParams } = require("@modelcontextprotocol/sdk/client/auth.js");
const { Client } = require("@modelcontextprotocol/sdk/client/index.js");
const { StreamableHTTPClientTransport } = require(
  "@modelcontextprotocol/sdk/client/streamableHttp.js",
);

const load = () => (existsSync(stateFile) ? JSON.parse(readFileSync(stateFile, "utf8")) : {});
const keep = (changes) =>
  writeFileSync(stateFile, JSON.stringify({ ...load(), ...changes }, null, 2));

class FileProvider {
  get redirectUrl() {
    return redirectUri;
  }

  get clientMetadata() {
    return {
      client_name: "TypeScript SDK Test Client",
      redirect_uris: [redirectUri],
      grant_types: ["authorization_code", "refresh_token"],
      response_types: ["code"],
      token_endpoint_auth_method: "none",
    };
  }

  state() {
    const state = randomBytes(16).toString("hex");
    keep({ state });
    return state;
  }

  clientInformation() {
    return load().clientInformation;
  }

  saveClientInformation(clientInformation) {
    keep({ clientInformation });
  }

  tokens() {
    return load().tokens;
  }

  saveTokens(tokens) {
    keep({ tokens });
  }

  redirectToAuthorization(authorizationUrl) {
    keep({ authorizationUrl: authorizationUrl.toString() });
    console.log(`AUTHORIZATION_URL ${authorizationUrl}`);
  }

  saveCodeVerifier(codeVerifier) {
    keep({ codeVerifier });
  }

  codeVerifier() {
    const { codeVerifier } = load();
    if (!codeVerifier) throw new Error("No code verifier saved");
    return codeVerifier;
  }
}

const provider = new FileProvider();

if (mode === "start") {
  // What the transport does on a 401: read resource_metadata and scope from the challenge.
  const refused = await fetch(serverUrl, {
    method: "POST",
    headers: { "Content-Type": "application/json", Accept: "application/json, text/event-stream" },
    body: JSON.stringify({ jsonrpc: "2.0", id: 0, method: "tools/list", params: {} }),
  });
  if (refused.status !== 401) {
    throw new Error(`Expected 401 from ${serverUrl}, got ${refused.status}`);
  }
  const { resourceMetadataUrl, scope } = extractWWWAuthenticateParams(refused);
  console.log(`CHALLENGE ${JSON.stringify({ resourceMetadataUrl, scope })}`);
  const result = await auth(provider, { serverUrl, resourceMetadataUrl, scope });
  console.log(`RESULT ${result}`);
} else if (mode === "finish") {
  const answer = new URL(callbackUrl);
  const error = answer.searchParams.get("error");
  if (error) throw new Error(`Authorization refused: ${error} ${answer.searchParams}`);
  if (answer.searchParams.get("state") !== load().state) throw new Error("State does not match");
  const authorizationCode = answer.searchParams.get("code");
  const result = await auth(provider, { serverUrl, authorizationCode });
  console.log(`RESULT ${result}`);
  if (result !== "AUTHORIZED") process.exit(3);

  const client = new Client({ name: "gatehouse-sdk-test", version: "1.0.0" });
  const transport = new StreamableHTTPClientTransport(new URL(serverUrl), {
    authProvider: provider,
  });
  await client.connect(transport);
  const { tools } = await client.listTools();
  console.log(`TOOLS ${JSON.stringify(tools.map((tool) => tool.name))}`);
  await client.close();
} else {
  throw new Error(`Unknown mode ${mode}`);
}
