"""The API through clients nobody here wrote: each generated from the committed OpenAPI document
by a generator's default configuration, then used as its README shows, against a live server.
openapi-python-client makes a Python package; @hey-api/openapi-ts makes a TypeScript SDK on
fetch, which must pass `tsc --strict` before it runs. The tools live in var/clients/, put there
by scripts/install_generated_clients.sh."""

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest

from apps.api.scopes import EVERY_SCOPE
from apps.api_keys.models import ApiKey
from apps.api_keys.tokens import hash_secret
from apps.workspaces.models import Workspace
from config.openapi import OPENAPI_FILE
from tests.factories import make_key

pytestmark = pytest.mark.django_db(transaction=True)

CLIENTS = Path(__file__).resolve().parents[2] / "var" / "clients"
PYTHON_TOOL = CLIENTS / "venv" / "bin"
NODE_MODULES = CLIENTS / "node" / "node_modules"
NEW_NAME = "Renamed by a generated client"
NEW_KEY = "Made by a generated client"

# Both usage files print a JSON object: for each call, the HTTP status and the JSON body. The
# Python one adds the model the generated client parsed the body into, and what that model kept.
PYTHON_USAGE = """\
import json
import os
import sys
from typing import Any

from gatehouse_workspace_api_client import AuthenticatedClient
from gatehouse_workspace_api_client.api.default import (
    create_key,
    get_workspace,
    list_keys,
    update_workspace,
)
from gatehouse_workspace_api_client.models import (
    KeyCreate,
    KeyCreateExpiresInDays,
    KeyCreateScopesItem,
    KeyWithSecret,
    ListKeysState,
    WorkspacePatch,
)
from gatehouse_workspace_api_client.types import Response


def client(secret: str) -> AuthenticatedClient:
    return AuthenticatedClient(base_url=sys.argv[1], token=secret, raise_on_unexpected_status=True)


def outcome(response: Response[Any]) -> dict[str, Any]:
    parsed = response.parsed
    return {
        "status": int(response.status_code),
        "body": json.loads(response.content),
        "model": type(parsed).__name__,
        "kept": None if parsed is None else parsed.to_dict(),
    }


with client(os.environ["GATEHOUSE_KEY"]) as gatehouse:
    read = get_workspace.sync_detailed(client=gatehouse)
    updated = update_workspace.sync_detailed(
        client=gatehouse,
        body=WorkspacePatch(workspace_name=sys.argv[2], timezone="Europe/Berlin"),
    )
    before = list_keys.sync_detailed(client=gatehouse)
    created = create_key.sync_detailed(
        client=gatehouse,
        body=KeyCreate(
            name=sys.argv[3],
            scopes=[KeyCreateScopesItem.PRODUCTSREAD],
            expires_in_days=KeyCreateExpiresInDays.VALUE_30,
        ),
    )
    after = list_keys.sync_detailed(client=gatehouse, state=ListKeysState.ACTIVE)

if not isinstance(created.parsed, KeyWithSecret):
    sys.exit(f"createKey answered {created.status_code}: {created.content!r}")
# The new key's secret, as the typed model holds it, is a key that works.
with client(created.parsed.secret) as new_key:
    read_with_new_key = get_workspace.sync_detailed(client=new_key)

print(
    json.dumps(
        {
            "read": outcome(read),
            "updated": outcome(updated),
            "before": outcome(before),
            "created": outcome(created),
            "after": outcome(after),
            "readWithNewKey": outcome(read_with_new_key),
        }
    )
)
"""

TYPESCRIPT_USAGE = """\
import { createClient, createConfig } from './client/client';
import { createKey, getWorkspace, listKeys, updateWorkspace } from './client';
import type { KeyCreate, KeyWithSecret, Workspace, WorkspacePatch } from './client';

const [baseUrl, newName, newKey] = process.argv.slice(2);
const secret = process.env.GATEHOUSE_KEY;
if (!baseUrl || !newName || !newKey || !secret) {
  throw new Error('usage: GATEHOUSE_KEY=secret tsx usage.ts BASE_URL NEW_NAME NEW_KEY');
}
const client = (auth: string) => createClient(createConfig({ baseUrl, auth }));
const gatehouse = client(secret);

const patch: WorkspacePatch = { workspaceName: newName, timezone: 'Europe/Berlin' };
const body: KeyCreate = { name: newKey, scopes: ['products:read'], expiresInDays: 30 };

// The generated types are the document's: bodies it refuses do not compile.
export const refusedKeys: KeyCreate[] = [
  // @ts-expect-error 31 is not one of the lifetimes offered
  { name: 'k', scopes: ['products:read'], expiresInDays: 31 },
  // @ts-expect-error there is no such scope
  { name: 'k', scopes: ['products:delete'] },
  // @ts-expect-error a key needs a name
  { scopes: ['products:read'] },
];
export const refusedPatches: WorkspacePatch[] = [
  // @ts-expect-error the video quality is set in the dashboard only
  { videoSettings: { quality: '1080p' } },
  // @ts-expect-error not a language offered
  { transcriptionLanguage: 'xx' },
];

type Result = { data?: unknown; error?: unknown; response: Response };
const outcome = ({ data, error, response }: Result) => ({
  status: response.status,
  body: data ?? error,
});

const read = await getWorkspace({ client: gatehouse });
const updated = await updateWorkspace({ client: gatehouse, body: patch });
const before = await listKeys({ client: gatehouse });
const created = await createKey({ client: gatehouse, body });
const after = await listKeys({ client: gatehouse, query: { state: 'active' } });
const workspace: Workspace | undefined = read.data;
const made: KeyWithSecret | undefined = created.data;
if (!workspace || !made) {
  throw new Error(`no workspace or no key: ${JSON.stringify([read.error, created.error])}`);
}
const readWithNewKey = await getWorkspace({ client: client(made.secret) });

console.log(
  JSON.stringify({
    read: outcome(read),
    updated: outcome(updated),
    before: outcome(before),
    created: outcome(created),
    after: outcome(after),
    readWithNewKey: outcome(readWithNewKey),
  }),
);
"""

TSCONFIG = {
    "compilerOptions": {
        "target": "ES2022",
        "module": "ESNext",
        "moduleResolution": "Bundler",
        "types": ["node"],
        "typeRoots": [str(NODE_MODULES / "@types")],
    },
    "include": ["client/**/*.ts", "usage.ts"],
}


def installed(tool: Path) -> Path:
    if not tool.exists():
        message = f"{tool} is missing: run scripts/install_generated_clients.sh"
        if os.environ.get("GATEHOUSE_REQUIRE_BROWSER"):
            pytest.fail(message)
        pytest.skip(message)
    return tool


def run(*args: str | Path, cwd: Path, env: dict[str, str] | None = None) -> str:
    result = subprocess.run(
        [str(arg) for arg in args],
        cwd=cwd,
        env={**os.environ, **(env or {})},
        capture_output=True,
        text=True,
        timeout=180,
    )
    output = result.stdout + result.stderr
    assert result.returncode == 0, f"{args[0]} exited {result.returncode}:\n{output[-4000:]}"
    return result.stdout


def shape(value: Any) -> Any:
    """A JSON value's field names, all the way down, without the values."""
    if isinstance(value, dict):
        return {name: shape(item) for name, item in value.items()}
    if isinstance(value, list):
        return [shape(item) for item in value]
    return None


def assert_it_read_changed_and_made(
    answer: dict[str, Any], workspace: Workspace, calling: ApiKey
) -> None:
    """What both clients do: read and change the workspace, list the keys, make one."""
    read, updated = answer["read"], answer["updated"]
    assert read["status"] == 200, read
    assert read["body"]["workspaceId"] == str(workspace.pk)
    assert read["body"]["timezone"] == "UTC"
    assert sorted(read["body"]["scopes"]) == sorted(EVERY_SCOPE)
    assert updated["status"] == 200, updated
    assert updated["body"]["workspaceName"] == NEW_NAME
    assert updated["body"]["timezone"] == "Europe/Berlin"
    workspace.refresh_from_db()
    assert (workspace.name, workspace.timezone) == (NEW_NAME, "Europe/Berlin")

    before, created, after = answer["before"], answer["created"], answer["after"]
    assert before["status"] == 200, before
    assert [key["id"] for key in before["body"]["data"]] == [calling.pk]
    assert created["status"] == 201, created
    made = ApiKey.objects.get(pk=created["body"]["id"])
    assert made.pk != calling.pk and made.workspace_id == workspace.pk
    assert (made.name, made.scopes) == (NEW_KEY, ["products:read"])
    assert made.expires_at is not None
    assert 29 <= (made.expires_at - made.created_at).days <= 30
    assert made.secret_hash == hash_secret(created["body"]["secret"])
    assert after["status"] == 200, after
    assert [key["id"] for key in after["body"]["data"]] == [made.pk, calling.pk]
    assert "secret" not in after["body"]["data"][0]

    with_new_key = answer["readWithNewKey"]
    assert with_new_key["status"] == 200, with_new_key
    assert with_new_key["body"]["scopes"] == ["products:read"]


def test_a_python_client_generated_by_openapi_python_client_works(live_server, tmp_path):
    generator = installed(PYTHON_TOOL / "openapi-python-client")
    calling = make_key(scopes=EVERY_SCOPE)
    # The generator's default hooks run ruff, which it installed beside itself.
    path = {"PATH": f"{PYTHON_TOOL}{os.pathsep}{os.environ.get('PATH', '')}"}
    generated = run(generator, "generate", "--path", OPENAPI_FILE, cwd=tmp_path, env=path)
    assert "Warning" not in generated, generated
    (package,) = tmp_path.glob("*/gatehouse_workspace_api_client")
    (tmp_path / "usage.py").write_text(PYTHON_USAGE)

    printed = run(
        PYTHON_TOOL / "python",
        "usage.py",
        f"{live_server.url}/api/v1",
        NEW_NAME,
        NEW_KEY,
        cwd=tmp_path,
        env={"GATEHOUSE_KEY": calling.secret, "PYTHONPATH": str(package.parent)},
    )
    answer = json.loads(printed)
    assert_it_read_changed_and_made(answer, calling.key.workspace, calling.key)
    models = {name: outcome["model"] for name, outcome in answer.items()}
    assert models == {
        "read": "Workspace",
        "updated": "Workspace",
        "before": "KeyList",
        "created": "KeyWithSecret",
        "after": "KeyList",
        "readWithNewKey": "Workspace",
    }
    # The models drop nothing the server sent, nested fields too: each is in the document.
    for name, outcome in answer.items():
        assert shape(outcome["kept"]) == shape(outcome["body"]), name


@pytest.fixture
def typescript_client(tmp_path: Path) -> Path:
    """A folder holding the SDK @hey-api/openapi-ts generated (client/), a usage file calling
    it, and a tsconfig that checks both."""
    generator = installed(NODE_MODULES / ".bin" / "openapi-ts")
    # Run in tmp_path, where no openapi-ts.config.* can change the defaults.
    run(generator, "--input", OPENAPI_FILE, "--output", "client", cwd=tmp_path)
    (tmp_path / "usage.ts").write_text(TYPESCRIPT_USAGE)
    (tmp_path / "tsconfig.json").write_text(json.dumps(TSCONFIG))
    (tmp_path / "package.json").write_text(json.dumps({"type": "module"}))
    return tmp_path


def test_the_typescript_sdk_generated_by_openapi_ts_compiles_under_strict(typescript_client):
    tsc = installed(NODE_MODULES / ".bin" / "tsc")
    run(tsc, "--project", "tsconfig.json", "--strict", "--noEmit", cwd=typescript_client)


def test_the_typescript_sdk_generated_by_openapi_ts_works(live_server, typescript_client):
    tsx = installed(NODE_MODULES / ".bin" / "tsx")
    calling = make_key(scopes=EVERY_SCOPE)
    printed = run(
        tsx,
        "usage.ts",
        f"{live_server.url}/api/v1",
        NEW_NAME,
        NEW_KEY,
        cwd=typescript_client,
        env={"GATEHOUSE_KEY": calling.secret},
    )
    assert_it_read_changed_and_made(json.loads(printed), calling.key.workspace, calling.key)
