// The Java side of ``bench assignor --java``: times Kafka's own server-side assignor
// (org.apache.kafka.coordinator.group.assignor.UniformAssignor or RangeAssignor, compiled from
// apache/kafka's sources by assignors/java_reference.py) on the input the Python bench wrote.
//
// Usage: java KafkaAssignorBench <input file> <uniform|range> <runs> <warmup seconds>
// Input (one line each): "topic <uuid> <partitions>", then
// "member <id> <subscribed uuids, comma-separated or -> <assignment: uuid:p,p;uuid:p or ->".
// Prints one JSON line: the SHA-256 of the input re-written from what was parsed (the Python
// side checks it against its own), and the run times (ms) after a warm-up.

import org.apache.kafka.common.Uuid;
import org.apache.kafka.coordinator.group.api.assignor.GroupAssignment;
import org.apache.kafka.coordinator.group.api.assignor.GroupSpec;
import org.apache.kafka.coordinator.group.api.assignor.MemberAssignment;
import org.apache.kafka.coordinator.group.api.assignor.MemberSubscription;
import org.apache.kafka.coordinator.group.api.assignor.PartitionAssignor;
import org.apache.kafka.coordinator.group.api.assignor.SubscribedTopicDescriber;
import org.apache.kafka.coordinator.group.api.assignor.SubscriptionType;
import org.apache.kafka.coordinator.group.assignor.RangeAssignor;
import org.apache.kafka.coordinator.group.assignor.UniformAssignor;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Paths;
import java.security.MessageDigest;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collection;
import java.util.Collections;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.TreeSet;

public final class KafkaAssignorBench {
    private static final class Member implements MemberSubscription, MemberAssignment {
        final Set<Uuid> topics;
        final Map<Uuid, Set<Integer>> assignment;

        Member(Set<Uuid> topics, Map<Uuid, Set<Integer>> assignment) {
            this.topics = topics;
            this.assignment = assignment;
        }

        @Override public Optional<String> rackId() { return Optional.empty(); }
        @Override public Optional<String> instanceId() { return Optional.empty(); }
        @Override public Set<Uuid> subscribedTopicIds() { return topics; }
        @Override public Map<Uuid, Set<Integer>> partitions() { return assignment; }
    }

    private static final class Spec implements GroupSpec {
        final Map<String, Member> members;
        final SubscriptionType type;
        final Map<Uuid, Set<Integer>> assigned = new HashMap<>();

        Spec(Map<String, Member> members) {
            this.members = members;
            Set<Set<Uuid>> distinct = new HashSet<>();
            for (Member m : members.values()) {
                distinct.add(m.topics);
                m.assignment.forEach((t, ps) ->
                    assigned.computeIfAbsent(t, k -> new HashSet<>()).addAll(ps));
            }
            type = distinct.size() <= 1 ? SubscriptionType.HOMOGENEOUS
                : SubscriptionType.HETEROGENEOUS;
        }

        @Override public Collection<String> memberIds() { return members.keySet(); }
        @Override public SubscriptionType subscriptionType() { return type; }
        @Override public boolean isPartitionAssigned(Uuid topicId, int partitionId) {
            Set<Integer> ps = assigned.get(topicId);
            return ps != null && ps.contains(partitionId);
        }
        @Override public MemberSubscription memberSubscription(String memberId) {
            return members.get(memberId);
        }
        @Override public MemberAssignment memberAssignment(String memberId) {
            return members.get(memberId);
        }
    }

    private static final class Topics implements SubscribedTopicDescriber {
        final Map<Uuid, Integer> partitions;

        Topics(Map<Uuid, Integer> partitions) { this.partitions = partitions; }

        @Override public int numPartitions(Uuid topicId) {
            return partitions.getOrDefault(topicId, -1);
        }
        @Override public Set<String> racksForPartition(Uuid topicId, int partition) {
            return Collections.emptySet();
        }
    }

    public static void main(String[] args) throws Exception {
        List<String> lines = Files.readAllLines(Paths.get(args[0]), StandardCharsets.UTF_8);
        PartitionAssignor assignor = args[1].equals("range") ? new RangeAssignor()
            : new UniformAssignor();
        int runs = Integer.parseInt(args[2]);
        double warmupSeconds = Double.parseDouble(args[3]);

        Map<Uuid, Integer> partitions = new LinkedHashMap<>();
        Map<String, Member> members = new LinkedHashMap<>();
        for (String line : lines) {
            String[] f = line.split(" ");
            if (f[0].equals("topic")) {
                partitions.put(Uuid.fromString(f[1]), Integer.parseInt(f[2]));
                continue;
            }
            Set<Uuid> topics = new LinkedHashSet<>();
            if (!f[2].equals("-")) {
                for (String t : f[2].split(",")) topics.add(Uuid.fromString(t));
            }
            Map<Uuid, Set<Integer>> held = new LinkedHashMap<>();
            if (!f[3].equals("-")) {
                for (String piece : f[3].split(";")) {
                    String[] tp = piece.split(":");
                    Set<Integer> ps = new LinkedHashSet<>();
                    for (String p : tp[1].split(",")) ps.add(Integer.parseInt(p));
                    held.put(Uuid.fromString(tp[0]), Collections.unmodifiableSet(ps));
                }
            }
            members.put(f[1], new Member(topics, Collections.unmodifiableMap(held)));
        }
        String digest = digest(partitions, members);
        Spec spec = new Spec(members);
        Topics describer = new Topics(partitions);

        long warmupEnd = System.nanoTime() + (long) (warmupSeconds * 1e9);
        GroupAssignment result = null;
        int warmups = 0;
        while (System.nanoTime() < warmupEnd || warmups < 5) {
            result = assignor.assign(spec, describer);
            warmups++;
        }
        double[] ms = new double[runs];
        for (int i = 0; i < runs; i++) {
            long start = System.nanoTime();
            result = assignor.assign(spec, describer);
            ms[i] = (System.nanoTime() - start) / 1e6;
        }
        long assignedPartitions = 0;
        for (MemberAssignment m : result.members().values()) {
            for (Set<Integer> ps : m.partitions().values()) assignedPartitions += ps.size();
        }
        double[] sorted = ms.clone();
        Arrays.sort(sorted);
        StringBuilder samples = new StringBuilder();
        for (int i = 0; i < ms.length; i++) {
            if (i > 0) samples.append(", ");
            samples.append(String.format("%.4f", ms[i]));
        }
        System.out.println("{\"input_sha256\": \"" + digest + "\", \"warmup_runs\": " + warmups
            + ", \"runs\": " + runs + ", \"min_ms\": " + String.format("%.4f", sorted[0])
            + ", \"median_ms\": " + String.format("%.4f", sorted[runs / 2])
            + ", \"assigned_partitions\": " + assignedPartitions
            + ", \"samples_ms\": [" + samples + "]}");
    }

    /** The input file's SHA-256, from the input as parsed (so both sides read the same). */
    private static String digest(Map<Uuid, Integer> partitions, Map<String, Member> members)
            throws Exception {
        StringBuilder text = new StringBuilder();
        partitions.forEach((t, n) -> text.append("topic ").append(t).append(' ').append(n)
            .append('\n'));
        members.forEach((id, m) -> {
            text.append("member ").append(id).append(' ');
            List<String> topics = new ArrayList<>();
            for (Uuid t : m.topics) topics.add(t.toString());
            text.append(topics.isEmpty() ? "-" : String.join(",", topics)).append(' ');
            List<String> pieces = new ArrayList<>();
            m.assignment.forEach((t, ps) -> {
                List<String> parts = new ArrayList<>();
                for (int p : new TreeSet<>(ps)) parts.add(Integer.toString(p));
                pieces.add(t + ":" + String.join(",", parts));
            });
            text.append(pieces.isEmpty() ? "-" : String.join(";", pieces)).append('\n');
        });
        byte[] hash = MessageDigest.getInstance("SHA-256")
            .digest(text.toString().getBytes(StandardCharsets.UTF_8));
        StringBuilder hex = new StringBuilder();
        for (byte b : hash) hex.append(String.format("%02x", b));
        return hex.toString();
    }
}
