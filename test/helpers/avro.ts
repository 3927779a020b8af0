import { type SchemaRegistry, SchemaType } from '@kafkajs/confluent-schema-registry';
import type { IHeaders } from 'kafkajs';

/**
 * Avro messages as the Open edX event bus frames them, for the service's own activation type
 * (openedx-events has none): the value is the `data` record, the envelope is in `ce_*` headers.
 * The real producer's messages are made by the real producer (scripts/openedx-producer/).
 */

/** An activation's `data` as an LMS that publishes it with an organization would define it in Avro. */
export const activationAvroSchema = {
  type: 'record',
  name: 'CloudEvent',
  namespace: 'org.openedx.learning.user.account.activated.v1',
  fields: [
    {
      name: 'user',
      type: {
        type: 'record',
        name: 'UserData',
        fields: [
          { name: 'id', type: 'long' },
          { name: 'is_active', type: 'boolean' },
          {
            name: 'pii',
            type: {
              type: 'record',
              name: 'UserPersonalData',
              fields: [
                { name: 'username', type: 'string' },
                { name: 'email', type: 'string' },
                { name: 'name', type: 'string' },
              ],
            },
          },
        ],
      },
    },
    { name: 'organization', type: ['null', 'string'], default: null },
  ],
};

/** Registers the activation schema under the event bus's subject naming (`<topic>-<record name>`); its id. */
export async function registerActivationSchema(registry: SchemaRegistry, topic: string): Promise<number> {
  const { id } = await registry.register(
    { type: SchemaType.AVRO, schema: JSON.stringify(activationAvroSchema) },
    { subject: `${topic}-${activationAvroSchema.namespace}.${activationAvroSchema.name}` },
  );
  return id;
}

/** The headers edx-event-bus-kafka writes (the envelope), for an event of `type`. */
export function eventBusHeaders(type: string, id: string, time: string): IHeaders {
  return {
    ce_type: type,
    ce_id: id,
    ce_source: 'openedx/lms/web',
    ce_specversion: '1.0',
    ce_time: time,
    ce_minorversion: '0',
    'content-type': 'application/avro',
    ce_datacontenttype: 'application/avro',
    sourcehost: 'test',
    sourcelib: '11.2.0',
  };
}
