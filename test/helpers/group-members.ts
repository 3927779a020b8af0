import { connect } from 'node:net';
import { kafka } from './events';
import { KAFKA_BROKERS } from './stack';

/**
 * Removes members from a consumer group now, as the coordinator does once a member's session
 * times out (kafkajs's is 30 s): the Kafka protocol's LeaveGroup (v3, a batch of member ids),
 * which any client may send for any member and which kafkajs's admin does not offer. A test that
 * SIGKILLs a consumer uses it so the dead member's partitions move at once instead of after its
 * session; a live member removed with it is told so at its next heartbeat or commit
 * (UNKNOWN_MEMBER_ID) and joins again, as a member evicted after a long pause does. The local
 * stack has one broker, which is every group's coordinator.
 */
export async function removeGroupMembers(groupId: string): Promise<string[]> {
  const admin = kafka.admin();
  await admin.connect();
  let members: string[];
  try {
    const {
      groups: [group],
    } = await admin.describeGroups([groupId]);
    members = group?.members.map((m) => m.memberId) ?? [];
  } finally {
    await admin.disconnect();
  }
  if (members.length === 0) return members;
  const str = (s: string) => {
    const bytes = Buffer.from(s);
    const len = Buffer.alloc(2);
    len.writeInt16BE(bytes.length);
    return Buffer.concat([len, bytes]);
  };
  const int = (n: number, size: 2 | 4) => {
    const b = Buffer.alloc(size);
    if (size === 2) b.writeInt16BE(n);
    else b.writeInt32BE(n);
    return b;
  };
  // Request header v1 (api key 13 LeaveGroup, version 3, correlation id, client id), then
  // group_id and [member_id, group_instance_id (null)].
  const body = Buffer.concat([
    int(13, 2),
    int(3, 2),
    int(1, 4),
    str('group-members-test'),
    str(groupId),
    int(members.length, 4),
    ...members.flatMap((m) => [str(m), int(-1, 2)]),
  ]);
  const [host, port] = KAFKA_BROKERS.split(',')[0]!.split(':');
  const response = await new Promise<Buffer>((resolve, reject) => {
    const socket = connect(Number(port), host!, () => socket.write(Buffer.concat([int(body.length, 4), body])));
    let got = Buffer.alloc(0);
    socket.on('data', (chunk) => {
      got = Buffer.concat([got, chunk]);
      if (got.length >= 4 && got.length >= 4 + got.readInt32BE(0)) {
        socket.end();
        resolve(got);
      }
    });
    socket.on('error', reject);
    socket.setTimeout(10000, () => socket.destroy(new Error('LeaveGroup: no answer in 10 s')));
  });
  // Response: size, correlation id, throttle_time_ms, error_code, [member_id, group_instance_id, error_code].
  const error = response.readInt16BE(12);
  if (error !== 0) throw new Error(`LeaveGroup of ${groupId} failed with Kafka error code ${error}`);
  return members;
}
