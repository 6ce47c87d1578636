"""ACLs over TCP with real clients: the ACL APIs (kafka-python's KafkaAdminClient and
confluent-kafka's AdminClient), and what the handlers refuse, as Kafka's StandardAuthorizer
and KafkaApis do.

On a PLAINTEXT listener every client is ``User:ANONYMOUS``: the "open" server allows what no
ACL restricts (``allow.everyone.if.no.acl.found=true``), so each test restricts its own
resources with DENY ACLs; the "closed" one allows only what ACLs allow. With SASL PLAIN, users
``admin`` (a super user) and ``alice`` get different answers on the same server.
"""

from __future__ import annotations

import datetime
import json
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import kafka.errors as Errors
import pytest
from confluent_kafka import Consumer, KafkaError, Producer, TopicPartition
from confluent_kafka import admin as cadmin
from kafka.admin import (
    ACL,
    ACLFilter,
    ACLOperation,
    ACLPermissionType,
    ACLResourcePatternType,
    KafkaAdminClient,
    NewTopic,
    ResourcePattern,
    ResourcePatternFilter,
    ResourceType,
)

import protocol
from protocol import ErrorCode
from tests.harness import ServerProcess, wait_until
from tests.integration.conftest import WireClient, kio_class, metadata_request

ROOT = Path(__file__).resolve().parents[2]
AUTHORIZER = "org.apache.kafka.metadata.authorizer.StandardAuthorizer"
ANONYMOUS = "User:ANONYMOUS"


def unique(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


@pytest.fixture(scope="module")
def open_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    with ServerProcess(tmp_path_factory.mktemp("acl-open") / "data", {
            "authorizer.class.name": AUTHORIZER, "allow.everyone.if.no.acl.found": "true",
            "group.initial.rebalance.delay.ms": "0"}) as server:
        yield server


@pytest.fixture(scope="module")
def admin(open_server: ServerProcess) -> Iterator[KafkaAdminClient]:
    client = KafkaAdminClient(bootstrap_servers=open_server.bootstrap, client_id="acl-admin",
                              request_timeout_ms=10000)
    try:
        yield client
    finally:
        client.close()


def acl(name: str, operation: ACLOperation = ACLOperation.READ,
        permission: ACLPermissionType = ACLPermissionType.DENY,
        resource_type: ResourceType = ResourceType.TOPIC, principal: str = ANONYMOUS,
        host: str = "*", pattern: ACLResourcePatternType = ACLResourcePatternType.LITERAL
        ) -> ACL:
    return ACL(principal=principal, host=host, operation=operation, permission_type=permission,
               resource_pattern=ResourcePattern(resource_type, name, pattern))


def create(admin: KafkaAdminClient, *acls: ACL) -> None:
    result = admin.create_acls(list(acls))
    assert result["failed"] == [], result


def call(server: ServerProcess, body: Any) -> Any:
    with WireClient(server.bootstrap) as wire:
        return wire.request(body)


def find_coordinator(server: ServerProcess, *groups: str) -> list[ErrorCode]:
    request = kio_class("find_coordinator", 4, "request", "FindCoordinatorRequest")
    answer = call(server, protocol.make(request, key_type=0, coordinator_keys=groups))
    return [c.error_code for c in answer.coordinators]


def commit(server: ServerProcess, group: str, *topics: str) -> dict[str, ErrorCode]:
    """OffsetCommit v8 of offset 0 of partition 0 of each topic, outside any generation."""
    request = kio_class("offset_commit", 8, "request", "OffsetCommitRequest")
    topic = kio_class("offset_commit", 8, "request", "OffsetCommitRequestTopic")
    partition = kio_class("offset_commit", 8, "request", "OffsetCommitRequestPartition")
    answer = call(server, protocol.make(
        request, group_id=group, generation_id_or_member_epoch=-1, member_id="",
        group_instance_id=None, topics=tuple(protocol.make(topic, name=t, partitions=(
            protocol.make(partition, partition_index=0, committed_offset=0,
                          committed_leader_epoch=-1, committed_metadata=""),))
            for t in topics)))
    return {t.name: t.partitions[0].error_code for t in answer.topics}


def metadata(server: ServerProcess, topics: list[str] | None) -> dict[str, ErrorCode]:
    answer = call(server, metadata_request(12, topics))
    return {t.name: t.error_code for t in answer.topics}


def acl_filter(**fields: Any) -> ACLFilter:
    pattern = fields.pop("pattern", ResourcePatternFilter(ResourceType.ANY, None,
                                                          ACLResourcePatternType.ANY))
    return ACLFilter(principal=fields.get("principal"), host=fields.get("host"),
                     operation=fields.get("operation", ACLOperation.ANY),
                     permission_type=fields.get("permission", ACLPermissionType.ANY),
                     resource_pattern=pattern)


# --- the ACL APIs --------------------------------------------------------------------------
def test_without_an_authorizer_the_acl_apis_answer_security_disabled(
        shared_server: ServerProcess) -> None:
    client = KafkaAdminClient(bootstrap_servers=shared_server.bootstrap)
    try:
        assert client.create_acls([acl("t")])["failed"] == [Errors.SecurityDisabledError]
        with pytest.raises(Errors.SecurityDisabledError):
            client.describe_acls(acl_filter())
        [(_, matched, error)] = client.delete_acls([acl_filter()])
        assert matched == [] and error is Errors.SecurityDisabledError
    finally:
        client.close()
    # and every other request is allowed, as before
    assert find_coordinator(shared_server, "g") == [ErrorCode.none]


def test_kafka_python_admin_creates_lists_and_deletes_acls(admin: KafkaAdminClient) -> None:
    name = unique("kp-acl")
    literal = acl(name, ACLOperation.READ, ACLPermissionType.ALLOW, principal="User:kp")
    prefixed = acl(name[:6], ACLOperation.WRITE, ACLPermissionType.DENY, principal="User:kp",
                   pattern=ACLResourcePatternType.PREFIXED)
    group = acl(name, ACLOperation.ALL, ACLPermissionType.ALLOW, ResourceType.GROUP,
                principal="User:kp", host="10.1.2.3")
    create(admin, literal, prefixed, group)
    create(admin, literal)  # an ACL that exists is accepted again, and not duplicated
    found, error = admin.describe_acls(acl_filter(principal="User:kp"))
    assert error is Errors.NoError
    assert sorted(map(str, found)) == sorted(map(str, (literal, prefixed, group)))
    # MATCH: the ACLs that apply to a topic name (its literal one and the prefix)
    found, _ = admin.describe_acls(acl_filter(pattern=ResourcePatternFilter(
        ResourceType.TOPIC, name, ACLResourcePatternType.MATCH)))
    assert sorted(map(str, found)) == sorted(map(str, (literal, prefixed)))
    # CLUSTER's only name is kafka-cluster; an empty name is refused too
    result = admin.create_acls([acl("other", resource_type=ResourceType.CLUSTER),
                                acl("", principal="User:kp")])
    assert result["failed"] == [Errors.InvalidRequestError, Errors.InvalidRequestError]
    [(_, deleted, error)] = admin.delete_acls([acl_filter(
        principal="User:kp", pattern=ResourcePatternFilter(ResourceType.TOPIC, None,
                                                           ACLResourcePatternType.ANY))])
    assert error is Errors.NoError
    assert sorted(map(str, deleted)) == sorted(map(str, (literal, prefixed)))
    found, _ = admin.describe_acls(acl_filter(principal="User:kp"))
    assert list(map(str, found)) == [str(group)]
    admin.delete_acls([acl_filter(principal="User:kp")])
    assert admin.describe_acls(acl_filter(principal="User:kp"))[0] == []


def test_confluent_admin_creates_lists_and_deletes_acls(open_server: ServerProcess) -> None:
    client = cadmin.AdminClient({"bootstrap.servers": open_server.bootstrap})
    name = unique("ck-acl")
    bindings = [
        cadmin.AclBinding(cadmin.ResourceType.TOPIC, name, cadmin.ResourcePatternType.LITERAL,
                          "User:ck", "*", cadmin.AclOperation.READ,
                          cadmin.AclPermissionType.ALLOW),
        cadmin.AclBinding(cadmin.ResourceType.GROUP, name, cadmin.ResourcePatternType.PREFIXED,
                          "User:ck", "*", cadmin.AclOperation.DESCRIBE,
                          cadmin.AclPermissionType.DENY)]
    for future in client.create_acls(bindings, request_timeout=10).values():
        assert future.result() is None
    anything: Any = None  # a filter's None (the stubs say str)
    everything = cadmin.AclBindingFilter(
        cadmin.ResourceType.ANY, anything, cadmin.ResourcePatternType.ANY, "User:ck",
        anything, cadmin.AclOperation.ANY, cadmin.AclPermissionType.ANY)
    found = client.describe_acls(everything, request_timeout=10).result()
    assert sorted(map(str, found)) == sorted(map(str, bindings))
    deleted = client.delete_acls([everything], request_timeout=10)[everything].result()
    assert sorted(map(str, deleted)) == sorted(map(str, bindings))
    assert client.describe_acls(everything, request_timeout=10).result() == []


def test_a_filter_with_an_unknown_element_is_an_invalid_request(
        open_server: ServerProcess) -> None:
    describe = kio_class("describe_acls", 3, "request", "DescribeAclsRequest")
    answer = call(open_server, protocol.make(
        describe, resource_type_filter=0, resource_name_filter=None, pattern_type_filter=1,
        principal_filter=None, host_filter=None, operation=1, permission_type=1))
    assert answer.error_code == ErrorCode.invalid_request
    delete = kio_class("delete_acls", 3, "request", "DeleteAclsRequest")
    delete_filter = kio_class("delete_acls", 3, "request", "DeleteAclsFilter")
    answer = call(open_server, protocol.make(delete, filters=(protocol.make(
        delete_filter, resource_type_filter=1, resource_name_filter=None,
        pattern_type_filter=1, principal_filter=None, host_filter=None, operation=0,
        permission_type=1),)))
    assert [r.error_code for r in answer.filter_results] == [ErrorCode.invalid_request]


# --- what the handlers refuse ----------------------------------------------------------------
def test_a_consumer_without_group_read_gets_group_authorization_failed(
        open_server: ServerProcess, admin: KafkaAdminClient) -> None:
    group, topic = unique("no-read-g"), unique("no-read-t")
    admin.create_topics([NewTopic(topic, 1, 1)])
    # DESCRIBE allowed (FindCoordinator works), READ denied: JoinGroup is refused
    create(admin, acl(group, resource_type=ResourceType.GROUP),
           acl(group, ACLOperation.DESCRIBE, ACLPermissionType.ALLOW, ResourceType.GROUP))
    consumer = Consumer({"bootstrap.servers": open_server.bootstrap, "group.id": group,
                         "auto.offset.reset": "earliest", "session.timeout.ms": 6000})
    try:
        consumer.subscribe([topic])
        deadline = time.monotonic() + 15
        error = None
        while error is None and time.monotonic() < deadline:
            message = consumer.poll(0.5)
            if message is not None and message.error() is not None:
                error = message.error()
        assert error is not None and error.code() == KafkaError.GROUP_AUTHORIZATION_FAILED
    finally:
        consumer.close()
    assert find_coordinator(open_server, group) == [ErrorCode.none]
    assert commit(open_server, group, topic) == {topic: ErrorCode.group_authorization_failed}
    # a group with ACLs is no longer open to everyone: without the ALLOW, DESCRIBE is denied
    admin.delete_acls([acl_filter(permission=ACLPermissionType.ALLOW,
                                  pattern=ResourcePatternFilter(
                                      ResourceType.GROUP, group,
                                      ACLResourcePatternType.LITERAL))])
    assert find_coordinator(open_server, group) == [ErrorCode.group_authorization_failed]


def test_without_topic_read_on_one_of_two_topics_only_that_one_fails(
        open_server: ServerProcess, admin: KafkaAdminClient) -> None:
    group, readable, denied = unique("two-g"), unique("two-ok"), unique("two-denied")
    admin.create_topics([NewTopic(readable, 1, 1), NewTopic(denied, 1, 1)])
    producer = Producer({"bootstrap.servers": open_server.bootstrap})
    for topic in (readable, denied):
        producer.produce(topic, b"record")
    assert producer.flush(10) == 0
    # READ denied, DESCRIBE allowed: the consumer sees the topic, its fetches are refused
    create(admin, acl(denied),
           acl(denied, ACLOperation.DESCRIBE, ACLPermissionType.ALLOW))
    consumer = Consumer({"bootstrap.servers": open_server.bootstrap, "group.id": group,
                         "auto.offset.reset": "earliest", "enable.auto.commit": False})
    try:
        consumer.subscribe([readable, denied])
        got: list[str | None] = []
        errors: set[int] = set()
        deadline = time.monotonic() + 15
        while (not got or not errors) and time.monotonic() < deadline:
            message = consumer.poll(0.5)
            if message is None:
                continue
            if (error := message.error()) is not None:
                errors.add(error.code())
            else:
                got.append(message.topic())
        assert got == [readable]
        assert errors == {KafkaError.TOPIC_AUTHORIZATION_FAILED}
    finally:
        consumer.close()
    assert commit(open_server, group, readable, denied) == {
        readable: ErrorCode.none, denied: ErrorCode.topic_authorization_failed}


def test_prefixed_acls_hide_topics_from_metadata(open_server: ServerProcess,
                                                 admin: KafkaAdminClient) -> None:
    prefix = unique("hidden") + "-"
    shown = unique("shown")
    admin.create_topics([NewTopic(prefix + "a", 1, 1), NewTopic(shown, 1, 1)])
    create(admin, acl(prefix, ACLOperation.DESCRIBE, principal="User:*",
                      pattern=ACLResourcePatternType.PREFIXED))
    listed = metadata(open_server, None)
    assert shown in listed and prefix + "a" not in listed
    # asked for by name: refused, whether the topic exists or not, and not auto-created
    assert metadata(open_server, [prefix + "a", prefix + "missing", shown]) == {
        prefix + "a": ErrorCode.topic_authorization_failed,
        prefix + "missing": ErrorCode.topic_authorization_failed, shown: ErrorCode.none}
    assert prefix + "a" not in admin.list_topics()
    # the prefix is not a literal name
    assert metadata(open_server, [prefix[:-1]])[prefix[:-1]] != \
        ErrorCode.topic_authorization_failed


def test_deny_wins_over_allow(open_server: ServerProcess, admin: KafkaAdminClient) -> None:
    topic = unique("dx")
    admin.create_topics([NewTopic(topic, 1, 1)])
    create(admin, acl(topic, ACLOperation.ALL, ACLPermissionType.ALLOW),
           acl(topic[:3], ACLOperation.WRITE, pattern=ACLResourcePatternType.PREFIXED))
    failures: list[Any] = []
    producer = Producer({"bootstrap.servers": open_server.bootstrap, "retries": 0,
                         "message.timeout.ms": 10000})
    producer.produce(topic, b"x", on_delivery=lambda err, msg: failures.append(err))
    producer.flush(15)
    assert [e.code() for e in failures] == [KafkaError.TOPIC_AUTHORIZATION_FAILED]
    # the ALLOW ALL still allows READ: a commit goes through
    assert commit(open_server, unique("dx-g"), topic) == {topic: ErrorCode.none}


def test_heartbeats_and_group_admin_apis_check_group_and_topic_acls(
        open_server: ServerProcess, admin: KafkaAdminClient) -> None:
    denied_group, open_group = unique("hb-denied"), unique("hb-open")
    hidden, visible = unique("hb-hidden"), unique("hb-visible")
    admin.create_topics([NewTopic(hidden, 1, 1), NewTopic(visible, 1, 1)])
    group = ResourceType.GROUP
    create(admin, acl(denied_group, ACLOperation.ALL, resource_type=group),
           acl(hidden, ACLOperation.DESCRIBE))
    consumer_hb = kio_class("consumer_group_heartbeat", 1, "request",
                            "ConsumerGroupHeartbeatRequest")
    share_hb = kio_class("share_group_heartbeat", 1, "request", "ShareGroupHeartbeatRequest")

    def heartbeat(kind: Any, group_id: str, topics: tuple[str, ...]) -> ErrorCode:
        fields: dict[str, Any] = {"group_id": group_id, "member_id": uuid.uuid4().hex,
                                  "member_epoch": 0, "subscribed_topic_names": topics}
        if kind is consumer_hb:
            fields.update(rebalance_timeout=datetime.timedelta(seconds=30), topic_partitions=())
        answered: list[ErrorCode] = wait_until(
            lambda: [e] if (e := call(open_server, protocol.make(kind, **fields)).error_code)
            is not ErrorCode.coordinator_load_in_progress else None)
        return answered[0]

    for kind in (consumer_hb, share_hb):
        assert heartbeat(kind, denied_group, (visible,)) == ErrorCode.group_authorization_failed
        # every subscribed topic needs DESCRIBE
        assert heartbeat(kind, open_group, (visible, hidden)) == \
            ErrorCode.topic_authorization_failed
    assert heartbeat(consumer_hb, open_group, (visible,)) == ErrorCode.none
    # the group admin APIs
    describe = kio_class("describe_groups", 5, "request", "DescribeGroupsRequest")
    answer = call(open_server, protocol.make(describe, groups=(denied_group, open_group),
                                             include_authorized_operations=True))
    assert [g.error_code for g in answer.groups] == [ErrorCode.group_authorization_failed,
                                                     ErrorCode.none]
    assert answer.groups[1].authorized_operations == sum(
        1 << op for op in (3, 6, 8, 10, 11))  # everything on a group with no ACL
    delete = kio_class("delete_groups", 2, "request", "DeleteGroupsRequest")
    answer = call(open_server, protocol.make(delete, groups_names=(denied_group,)))
    assert [r.error_code for r in answer.results] == [ErrorCode.group_authorization_failed]


def test_host_based_acls(open_server: ServerProcess, admin: KafkaAdminClient) -> None:
    here, elsewhere, only_there = (unique("host-here"), unique("host-elsewhere"),
                                   unique("host-only-there"))
    group = ResourceType.GROUP
    create(admin,
           *(acl(g, ACLOperation.DESCRIBE, ACLPermissionType.ALLOW, group)
             for g in (here, elsewhere)),
           acl(here, ACLOperation.DESCRIBE, resource_type=group, host="127.0.0.1"),
           acl(elsewhere, ACLOperation.DESCRIBE, resource_type=group, host="10.9.9.9"),
           acl(only_there, ACLOperation.DESCRIBE, ACLPermissionType.ALLOW, group,
               host="10.9.9.9"))
    assert find_coordinator(open_server, here, elsewhere, only_there) == [
        ErrorCode.group_authorization_failed, ErrorCode.none,
        ErrorCode.group_authorization_failed]


@pytest.mark.slow
def test_acls_survive_a_restart_and_a_closed_server_allows_only_them(tmp_path: Path) -> None:
    data = tmp_path / "data"
    group, topic = unique("dur-g"), unique("dur-t")
    with ServerProcess(data, {"authorizer.class.name": AUTHORIZER,
                              "allow.everyone.if.no.acl.found": "true"}) as server:
        client = KafkaAdminClient(bootstrap_servers=server.bootstrap)
        try:
            client.create_topics([NewTopic(topic, 1, 1)])
            create(client,
                   acl(group, ACLOperation.READ, ACLPermissionType.ALLOW, ResourceType.GROUP),
                   acl(topic, ACLOperation.READ, ACLPermissionType.ALLOW))
            [(_, removed, _)] = client.delete_acls([acl_filter(pattern=ResourcePatternFilter(
                ResourceType.TOPIC, topic, ACLResourcePatternType.LITERAL))])
            assert len(removed) == 1
            # the last change this principal may make: once the cluster has an ACL, ALTER
            # on it is no longer open to everyone
            create(client, acl(topic, ACLOperation.READ, ACLPermissionType.ALLOW),
                   acl("kafka-cluster", ACLOperation.DESCRIBE, ACLPermissionType.ALLOW,
                       ResourceType.CLUSTER))
            assert client.create_acls([acl("t")])["failed"] == [
                Errors.ClusterAuthorizationFailedError]
        finally:
            client.close()
    with ServerProcess(data, {"authorizer.class.name": AUTHORIZER}) as server:
        assert server.event("authorizer enabled", acls=3) is not None
        client = KafkaAdminClient(bootstrap_servers=server.bootstrap)
        try:
            found, _ = client.describe_acls(acl_filter())  # DESCRIBE on the cluster
            assert len(found) == 3
            # no ALTER on the cluster: CLUSTER_AUTHORIZATION_FAILED
            assert client.create_acls([acl("t")])["failed"] == [
                Errors.ClusterAuthorizationFailedError]
        finally:
            client.close()
        assert find_coordinator(server, group, "other") == [
            ErrorCode.none, ErrorCode.group_authorization_failed]
        assert wait_until(lambda: (got := commit(server, group, topic, "other-topic"))[topic]
                          is not ErrorCode.coordinator_load_in_progress and got) == {
            topic: ErrorCode.none, "other-topic": ErrorCode.topic_authorization_failed}
        assert metadata(server, None) == {topic: ErrorCode.none}  # READ implies DESCRIBE
        # what the principal may do, in the AuthorizedOperations bitfields
        request = kio_class("metadata", 12, "request", "MetadataRequest")
        answer = call(server, protocol.make(request, topics=None,
                                            allow_auto_topic_creation=False,
                                            include_topic_authorized_operations=True))
        assert [t.topic_authorized_operations for t in answer.topics] == [
            (1 << 3) | (1 << 8)]  # READ, DESCRIBE
        cluster = kio_class("describe_cluster", 1, "request", "DescribeClusterRequest")
        answer = call(server, protocol.make(cluster,
                                            include_cluster_authorized_operations=True))
        assert answer.cluster_authorized_operations == 1 << 8  # DESCRIBE
        init = kio_class("init_producer_id", 4, "request", "InitProducerIdRequest")
        answer = call(server, protocol.make(init, transactional_id=None,
                                            transaction_timeout=datetime.timedelta(minutes=1)))
        assert answer.error_code == ErrorCode.cluster_authorization_failed
    dump = subprocess.run(
        [sys.executable, "-m", "coordinator", "log", "dump", "--log-dirs", str(data),
         "--metadata"], cwd=ROOT, capture_output=True, text=True, check=True, timeout=60)
    types = [json.loads(line)["type"] for line in dump.stdout.splitlines()]
    assert types.count("AccessControlEntry") == 4 and types.count("RemoveAccessControlEntry") == 1


# --- with SASL PLAIN users -------------------------------------------------------------------
JAAS = ('org.apache.kafka.common.security.plain.PlainLoginModule required '
        'user_admin="admin-secret" user_alice="alice-secret";')


def sasl(user: str) -> dict[str, str]:
    return {"security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "PLAIN",
            "sasl.username": user, "sasl.password": f"{user}-secret"}


@pytest.mark.slow
def test_sasl_users_get_what_their_acls_allow(tmp_path: Path) -> None:
    with ServerProcess(tmp_path / "data", {
            "listeners": "SASL_PLAINTEXT://127.0.0.1:0", "sasl.enabled.mechanisms": "PLAIN",
            "listener.name.sasl_plaintext.plain.sasl.jaas.config": JAAS,
            "authorizer.class.name": AUTHORIZER, "super.users": "User:admin",
            "group.initial.rebalance.delay.ms": "0"}) as server:
        admin = KafkaAdminClient(bootstrap_servers=server.bootstrap,
                                 security_protocol="SASL_PLAINTEXT", sasl_mechanism="PLAIN",
                                 sasl_plain_username="admin",
                                 sasl_plain_password="admin-secret")
        try:
            admin.create_topics([NewTopic("orders", 1, 1), NewTopic("secrets", 1, 1)])
            create(admin,
                   acl("app-", ACLOperation.READ, ACLPermissionType.ALLOW, ResourceType.GROUP,
                       principal="User:alice", pattern=ACLResourcePatternType.PREFIXED),
                   acl("orders", ACLOperation.READ, ACLPermissionType.ALLOW,
                       principal="User:alice"))
        finally:
            admin.close()
        producer = Producer({"bootstrap.servers": server.bootstrap, **sasl("admin")})
        producer.produce("orders", b"first")
        assert producer.flush(10) == 0

        alice_admin = cadmin.AdminClient({"bootstrap.servers": server.bootstrap,
                                          **sasl("alice")})
        assert set(alice_admin.list_topics(timeout=10).topics) == {"orders"}
        binding = cadmin.AclBinding(
            cadmin.ResourceType.TOPIC, "orders", cadmin.ResourcePatternType.LITERAL,
            "User:alice", "*", cadmin.AclOperation.ALL, cadmin.AclPermissionType.ALLOW)
        with pytest.raises(cadmin.KafkaException) as refused:
            alice_admin.create_acls([binding], request_timeout=10)[binding].result()
        assert refused.value.args[0].code() == KafkaError.CLUSTER_AUTHORIZATION_FAILED

        consumer = Consumer({"bootstrap.servers": server.bootstrap, "group.id": "app-1",
                             "auto.offset.reset": "earliest", **sasl("alice")})
        try:
            consumer.subscribe(["orders"])
            message = None
            deadline = time.monotonic() + 15
            while message is None and time.monotonic() < deadline:
                message = consumer.poll(0.5)
            assert message is not None and message.error() is None
            assert message.value() == b"first"
            consumer.commit(message=message, asynchronous=False)
        finally:
            consumer.close()

        outsider = Consumer({"bootstrap.servers": server.bootstrap, "group.id": "other",
                             "auto.offset.reset": "earliest", **sasl("alice")})
        try:
            outsider.subscribe(["orders"])
            error = None
            deadline = time.monotonic() + 15
            while error is None and time.monotonic() < deadline:
                polled = outsider.poll(0.5)
                if polled is not None and polled.error() is not None:
                    error = polled.error()
            assert error is not None and error.code() == KafkaError.GROUP_AUTHORIZATION_FAILED
        finally:
            outsider.close()
        server.wait_event("authorization denied", principal="User:alice",
                          resource_type="GROUP", resource="other")

        # ListGroups: alice (no DESCRIBE on the cluster) sees the groups she may describe
        private = Consumer({"bootstrap.servers": server.bootstrap, "group.id": "private",
                           **sasl("admin")})
        try:
            private.commit(offsets=[TopicPartition("orders", 0, 1)], asynchronous=False)
        finally:
            private.close()
        root = cadmin.AdminClient({"bootstrap.servers": server.bootstrap, **sasl("admin")})

        def listed(client: cadmin.AdminClient) -> set[str]:
            return {g.group_id for g in
                    client.list_consumer_groups(request_timeout=10).result().valid}

        assert listed(root) == {"app-1", "private"}
        assert listed(alice_admin) == {"app-1"}


def test_share_group_offsets_admin_checks_group_and_topic_acls(
        open_server: ServerProcess, admin: KafkaAdminClient) -> None:
    """AlterShareGroupOffsets needs READ on the group, DeleteShareGroupOffsets DELETE; topics
    without READ are answered TOPIC_AUTHORIZATION_FAILED, the others go to the group."""
    from tests.integration.test_share_offsets_admin import alter_request, delete_request

    group, hidden, visible = unique("so-g"), unique("so-hidden"), unique("so-visible")
    admin.create_topics([NewTopic(hidden, 1, 1), NewTopic(visible, 1, 1)])
    create(admin, acl(hidden, ACLOperation.READ))

    def send(body: Any) -> Any:
        return wait_until(lambda: a if (a := call(open_server, body)).error_code
                          is not ErrorCode.coordinator_load_in_progress else None)

    altered = send(alter_request(group, {hidden: {0: 0}, visible: {0: 0}}))
    assert altered.error_code is ErrorCode.none
    errors = {t.topic_name: [p.error_code for p in t.partitions] for t in altered.responses}
    assert errors[hidden] == [ErrorCode.topic_authorization_failed]
    assert errors[visible] == [ErrorCode.none]
    deleted = send(delete_request(group, [hidden, visible]))
    assert deleted.error_code is ErrorCode.none
    assert {t.topic_name: t.error_code for t in deleted.responses} == {
        hidden: ErrorCode.topic_authorization_failed, visible: ErrorCode.none}
    assert send(alter_request("", {visible: {0: 0}})).error_code is ErrorCode.invalid_group_id
    # once a group has ACLs, only what they allow is allowed
    reader, deleter = unique("so-reader"), unique("so-deleter")
    on_group = ResourceType.GROUP
    create(admin, acl(reader, ACLOperation.READ, ACLPermissionType.ALLOW, on_group),
           acl(deleter, ACLOperation.DELETE, ACLPermissionType.ALLOW, on_group))
    assert send(alter_request(reader, {visible: {0: 0}})).error_code is ErrorCode.none
    assert send(delete_request(reader, [visible])).error_code is \
        ErrorCode.group_authorization_failed
    assert send(alter_request(deleter, {visible: {0: 0}})).error_code is \
        ErrorCode.group_authorization_failed
    # past the ACLs: the group was never created (alter creates it)
    assert send(delete_request(deleter, [visible])).error_code is ErrorCode.group_id_not_found
