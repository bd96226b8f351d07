"""Single sign-on through a SAML 2.0 identity provider built with pysaml2 in the test (its own
keys, its own signed responses), against our service provider (docs/product.md §16): a signed
answer signs the teammate in; an unsigned one, one for another audience or recipient, an
expired one, a replayed one and a SHA-1-signed one are each refused."""

import base64
import datetime as dt
from urllib.parse import parse_qs, urlparse

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from cryptography.x509.oid import NameOID
from saml2 import BINDING_HTTP_REDIRECT
from saml2.config import IdPConfig
from saml2.metadata import entity_descriptor, metadata_tostring_fix
from saml2.saml import AUTHN_PASSWORD_PROTECTED, NAME_FORMAT_URI, NAMEID_FORMAT_EMAILADDRESS, NameID
from saml2.server import Server
from saml2.xmldsig import DIGEST_SHA1, DIGEST_SHA256, SIG_RSA_SHA1, SIG_RSA_SHA256

from apps.audit.services import Actor
from apps.sso.saml import sp_entity_id
from apps.sso.settings_service import sso_configure_saml, sso_set_mode
from apps.workspaces.models import Membership
from tests.factories import MembershipFactory, UserFactory, WorkspaceFactory, owner_of

pytestmark = pytest.mark.django_db
IDP = "https://idp.acme.example/metadata"
IDP_SSO = "https://idp.acme.example/sso"


@pytest.fixture
def keys(tmp_path):
    """The identity provider's signing key and certificate, as the files pysaml2 wants."""
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "idp.acme.example")])
    now = dt.datetime.now(dt.UTC)
    cert = (
        x509.CertificateBuilder().subject_name(name).issuer_name(name)
        .public_key(key.public_key()).serial_number(x509.random_serial_number())
        .not_valid_before(now - dt.timedelta(days=1)).not_valid_after(now + dt.timedelta(days=30))
        .sign(key, hashes.SHA256())
    )  # fmt: skip
    (tmp_path / "idp.key").write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.TraditionalOpenSSL,
            serialization.NoEncryption(),
        )
    )
    (tmp_path / "idp.crt").write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    return str(tmp_path / "idp.key"), str(tmp_path / "idp.crt")


def idp_config(keys, sp_metadata=(), *, lifetime=None, weak=False) -> IdPConfig:
    config = IdPConfig()
    config.load(
        {
            "entityid": IDP,
            "xmlsec_binary": "/usr/bin/xmlsec1",
            "key_file": keys[0],
            "cert_file": keys[1],
            "service": {
                "idp": {
                    "endpoints": {"single_sign_on_service": [(IDP_SSO, BINDING_HTTP_REDIRECT)]},
                    "policy": {
                        "default": {
                            "lifetime": lifetime or {"minutes": 5},
                            "attribute_restrictions": None,
                            "name_form": NAME_FORMAT_URI,
                            "nameid_format": NAMEID_FORMAT_EMAILADDRESS,
                        }
                    },
                    "name_id_format": [NAMEID_FORMAT_EMAILADDRESS],
                    "want_authn_requests_signed": False,
                    "signing_algorithm": SIG_RSA_SHA1 if weak else SIG_RSA_SHA256,
                    "digest_algorithm": DIGEST_SHA1 if weak else DIGEST_SHA256,
                }
            },
            "metadata": {"inline": list(sp_metadata)} if sp_metadata else {},
        }
    )
    return config


def metadata_of(config) -> str:
    text = metadata_tostring_fix(
        entity_descriptor(config), {"xs": "http://www.w3.org/2001/XMLSchema"}, None
    )
    return text.decode() if isinstance(text, bytes) else str(text)


@pytest.fixture
def workspace():
    return WorkspaceFactory(name="Acme")


@pytest.fixture
def ada(workspace):
    user = UserFactory(email="ada@acme.com")
    MembershipFactory(workspace=workspace, user=user, role=Membership.Role.ADMIN)
    return user


@pytest.fixture
def sso(workspace, keys):
    owner = owner_of(workspace, email="olga@acme.com")
    configured = sso_configure_saml(
        workspace=workspace, metadata=metadata_of(idp_config(keys)), actor=Actor.of_user(owner)
    )
    return sso_set_mode(sso=configured, mode="allowed", actor=Actor.of_user(owner))


class Idp:
    """The identity provider's side of one sign-in: it reads our AuthnRequest and answers."""

    def __init__(self, client, workspace, keys, *, also=(), **options) -> None:
        ours = [
            client.get(f"/sso/saml/{w.pk}/metadata").content.decode() for w in (workspace, *also)
        ]
        self.server = Server(config=idp_config(keys, ours, **options))
        self.workspace = workspace

    def ask(self, client):
        started = client.get(f"/sso/{self.workspace.pk}/")
        assert started.status_code == 302 and started["Location"].startswith(IDP_SSO)
        query = parse_qs(urlparse(started["Location"]).query)
        return self.server.parse_authn_request(query["SAMLRequest"][0], BINDING_HTTP_REDIRECT)

    def answer(self, request, *, email="ada@acme.com", sign=True, **changes) -> str:
        message = request.message
        xml = self.server.create_authn_response(
            identity={"email": [email]},
            in_response_to=changes.get("in_response_to", message.id),
            destination=changes.get("destination", message.assertion_consumer_service_url),
            sp_entity_id=changes.get("sp_entity_id", message.issuer.text),
            name_id=NameID(format=NAMEID_FORMAT_EMAILADDRESS, text=email),
            authn={"class_ref": AUTHN_PASSWORD_PROTECTED},
            sign_response=sign,
            sign_assertion=sign,
        )
        return base64.b64encode(str(xml).encode()).decode()


def post_answer(client, workspace, saml_response: str):
    """The provider's page POSTs the answer; we follow our own redirect to the finish."""
    posted = client.post(f"/sso/saml/{workspace.pk}/acs", {"SAMLResponse": saml_response})
    if posted.status_code != 302:
        return posted
    return client.get(posted["Location"])


def test_a_signed_answer_signs_the_teammate_in_and_links_them(client, sso, ada, keys):
    idp = Idp(client, sso.workspace, keys)
    finished = post_answer(client, sso.workspace, idp.answer(idp.ask(client)))
    assert finished.status_code == 302, finished.content
    assert client.get("/integrations/api/").status_code == 200
    assert Membership.objects.get(user=ada).sso_subject == "ada@acme.com"


def test_the_service_providers_metadata_names_its_audience_and_acs(client, sso):
    metadata = client.get(f"/sso/saml/{sso.workspace.pk}/metadata")
    assert metadata["Content-Type"] == "application/samlmetadata+xml"
    text = metadata.content.decode()
    assert f"/sso/saml/{sso.workspace.pk}/acs" in text and 'WantAssertionsSigned="true"' in text


@pytest.mark.parametrize(
    "change",
    ["unsigned", "another audience", "another recipient", "not asked for", "someone else"],
)
def test_a_bad_answer_is_refused(client, sso, ada, keys, change):
    # Another workspace of the same provider: an answer meant for it is another audience.
    other = WorkspaceFactory(name="Other")
    sso_configure_saml(workspace=other, metadata=sso.saml_metadata, actor=Actor.of_operator("test"))
    other_audience = sp_entity_id(other.pk)
    idp = Idp(client, sso.workspace, keys, also=[other])
    request = idp.ask(client)
    answers = {
        "unsigned": lambda: idp.answer(request, sign=False),
        "another audience": lambda: idp.answer(request, sp_entity_id=other_audience),
        "another recipient": lambda: idp.answer(request, destination="https://other.example/acs"),
        "not asked for": lambda: idp.answer(request, in_response_to="id-never-sent"),
        "someone else": lambda: idp.answer(request, email="eve@evil.example"),
    }
    refused = post_answer(client, sso.workspace, answers[change]())
    assert refused.status_code == 403, (change, refused.status_code)
    assert b"Single sign-on refused" in refused.content
    assert client.get("/integrations/api/").status_code == 302  # still signed out


def test_a_replayed_answer_is_refused(client, sso, ada, keys):
    idp = Idp(client, sso.workspace, keys)
    answer = idp.answer(idp.ask(client))
    assert post_answer(client, sso.workspace, answer).status_code == 302
    client.logout()
    replayed = post_answer(client, sso.workspace, answer)
    assert replayed.status_code == 403
    assert client.get("/integrations/api/").status_code == 302


def test_an_expired_and_a_sha1_signed_answer_are_refused(client, sso, ada, keys):
    expired = Idp(client, sso.workspace, keys, lifetime={"minutes": -10})
    assert (
        post_answer(client, sso.workspace, expired.answer(expired.ask(client))).status_code == 403
    )
    weak = Idp(client, sso.workspace, keys, weak=True)
    refused = post_answer(client, sso.workspace, weak.answer(weak.ask(client)))
    assert refused.status_code == 403 and b"SHA-1" in refused.content


def test_metadata_that_is_not_one_identity_providers_is_refused(workspace):
    from apps.common.validation import InvalidInput

    owner = owner_of(workspace)
    for junk in ("<not-saml/>", "plain text", ""):
        with pytest.raises(InvalidInput):
            sso_configure_saml(workspace=workspace, metadata=junk, actor=Actor.of_user(owner))


def test_owners_set_a_saml_provider_over_the_api(client, workspace, keys):
    from apps.api.scopes import EVERY_SCOPE
    from tests.conftest import auth
    from tests.factories import make_key

    owner = owner_of(workspace)
    manager = auth(make_key(user=owner, workspace=workspace, scopes=EVERY_SCOPE).secret)
    metadata = metadata_of(idp_config(keys))
    made = client.put(
        "/api/v1/sso", {"samlMetadata": metadata}, content_type="application/json", **manager
    )
    assert made.status_code == 200, made.content
    shown = made.json()
    assert (shown["protocol"], shown["samlIdentityProvider"]) == ("saml", IDP)
    assert shown["samlAcsUrl"].endswith(f"/sso/saml/{workspace.pk}/acs")
    both = client.put(
        "/api/v1/sso", {"samlMetadata": metadata, "issuer": "https://idp.example"},
        content_type="application/json", **manager,
    )  # fmt: skip
    assert both.status_code == 400 and "not both" in both.json()["message"]
    neither = client.put(
        "/api/v1/sso", {"mode": "allowed"}, content_type="application/json", **manager
    )
    assert neither.status_code == 400 and "samlMetadata" in neither.json()["message"]


def test_another_provider_starts_the_links_again(client, sso, ada, keys):
    idp = Idp(client, sso.workspace, keys)
    assert post_answer(client, sso.workspace, idp.answer(idp.ask(client))).status_code == 302
    assert Membership.objects.get(user=ada).sso_subject == "ada@acme.com"
    owner = Membership.objects.get(workspace=sso.workspace, role="owner").user
    sso_configure_saml(
        workspace=sso.workspace, metadata=sso.saml_metadata, actor=Actor.of_user(owner)
    )
    assert Membership.objects.get(user=ada).sso_subject == "ada@acme.com"  # the same one
    other = metadata_of(idp_config(keys)).replace(IDP, "https://other-idp.example/metadata")
    sso_configure_saml(workspace=sso.workspace, metadata=other, actor=Actor.of_user(owner))
    assert Membership.objects.get(user=ada).sso_subject == ""
