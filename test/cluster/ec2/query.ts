// The EC2 query protocol as the AWS SDK for Go v2 speaks it (aws/protocol/ec2query and the
// service/ec2 serializers and deserializers): requests are form-encoded parameters with lists
// flattened into numbered members (VolumeId.1, Filter.1.Name, Filter.1.Value.1,
// TagSpecification.1.Tag.1.Key); answers are XML documents whose root element the SDK does not
// check, with lists as <name><item>…</item></name>, and errors are
// <Response><Errors><Error><Code/><Message/></Error></Errors><RequestID/></Response>.
import { Ec2Error } from './ebs.ts';

export const apiVersion = '2016-11-15';
export const xmlNamespace = `http://ec2.amazonaws.com/doc/${apiVersion}/`;

/** The parameters of one request, or of one member of a list of structures (Filter.2.*). */
export class QueryParams {
  private readonly values: Map<string, string>;
  private readonly prefix: string;

  constructor(values: Map<string, string>, prefix = '') {
    this.values = values;
    this.prefix = prefix;
  }

  static parse(form: string): QueryParams {
    // A repeated name keeps its last value. An empty list arrives as "Name=", which no member
    // lookup (Name.1, …) matches.
    return new QueryParams(new Map(new URLSearchParams(form)));
  }

  /** Every parameter of the request, for the call log. */
  entries(): Record<string, string> {
    return Object.fromEntries(this.values);
  }

  /** The value as sent: empty is a value (a tag's, say), absent is undefined. */
  string(name: string): string | undefined {
    return this.values.get(this.prefix + name);
  }

  requiredString(name: string): string {
    const value = this.string(name);
    // Wording ours; the code is EC2's for a required parameter left out.
    if (!value) throw new Ec2Error('MissingParameter', `The request must contain the parameter ${this.prefix}${name}`);
    return value;
  }

  integer(name: string): number | undefined {
    const value = this.string(name);
    if (!value) return undefined;
    // Wording ours.
    if (!/^-?\d+$/.test(value)) throw new Ec2Error('InvalidParameterValue', `Invalid value '${value}' for ${this.prefix}${name}: an integer is required`);
    return Number(value);
  }

  boolean(name: string): boolean | undefined {
    const value = this.string(name);
    if (!value) return undefined;
    if (value !== 'true' && value !== 'false') {
      throw new Ec2Error('InvalidParameterValue', `Invalid value '${value}' for ${this.prefix}${name}: true or false is required`);
    }
    return value === 'true';
  }

  /** A flattened list of strings: Name.1, Name.2, … in member order. */
  list(name: string): string[] {
    return this.members(name).flatMap((index) => this.string(`${name}.${index}`) ?? []);
  }

  /** A flattened list of structures: Name.1.*, Name.2.*, … in member order. */
  structures(name: string): QueryParams[] {
    return this.members(name).map((index) => new QueryParams(this.values, `${this.prefix}${name}.${index}.`));
  }

  private members(name: string): number[] {
    const head = `${this.prefix}${name}.`;
    const indexes = new Set<number>();
    for (const key of this.values.keys()) {
      if (!key.startsWith(head)) continue;
      const index = Number(key.slice(head.length).split('.')[0]);
      if (Number.isInteger(index) && index > 0) indexes.add(index);
    }
    return [...indexes].sort((a, b) => a - b);
  }
}

/** Element content: lists render as <item>s, objects as child elements, undefined not at all. */
export type XmlValue = string | number | boolean | Date | undefined | XmlValue[] | { [element: string]: XmlValue };

export function successXml(action: string, requestId: string, body: Record<string, XmlValue>): string {
  const content = renderChildren({ requestId, ...body });
  return `<?xml version="1.0" encoding="UTF-8"?>\n<${action}Response xmlns="${xmlNamespace}">${content}</${action}Response>\n`;
}

export function errorXml(code: string, message: string, requestId: string): string {
  const error = renderChildren({ Code: code, Message: message });
  return `<?xml version="1.0" encoding="UTF-8"?>\n<Response><Errors><Error>${error}</Error></Errors><RequestID>${escape(requestId)}</RequestID></Response>\n`;
}

function renderChildren(object: Record<string, XmlValue>): string {
  return Object.entries(object)
    .map(([name, value]) => render(name, value))
    .join('');
}

function render(name: string, value: XmlValue): string {
  if (value === undefined) return '';
  if (Array.isArray(value)) return `<${name}>${value.map((item) => render('item', item)).join('')}</${name}>`;
  if (value instanceof Date) return `<${name}>${value.toISOString()}</${name}>`;
  if (typeof value === 'object') return `<${name}>${renderChildren(value)}</${name}>`;
  return `<${name}>${escape(String(value))}</${name}>`;
}

function escape(text: string): string {
  return text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}
