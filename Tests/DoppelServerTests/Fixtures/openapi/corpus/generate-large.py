#!/usr/bin/env python3
"""Writes large-vendor.yaml: an OpenAPI 3.0 document shaped like the large
public documents payment, messaging and storage vendors publish (about
3 MB, 1,100 operations): long Markdown descriptions, `x-` extensions on
everything, shared parameters and error responses by `$ref`, `allOf`
compositions whose `required` names another branch's property, `oneOf`
with a discriminator, a recursive schema, expandable fields, several
security schemes, and the vendors' own mistakes (an example with `null`
for an enum string, a relative path in a `uri` field, a date-time without
seconds). Deterministic: the committed file is what this writes.

Usage: python3 generate-large.py > large-vendor.yaml
"""
import sys

RESOURCES = 110  # ten operations each
out = sys.stdout
w = out.write

PROSE = ("This endpoint is part of the public API. Requests are authenticated with a secret key "
         "passed as a bearer token, or with HTTP basic authentication where the key is the user "
         "name and the password is empty. Every object returned has a stable identifier prefixed "
         "by its kind, an `object` field naming that kind, and a `created` timestamp. Lists are "
         "paginated with cursors: pass `starting_after` with the last id of a page to get the next. "
         "Errors are returned with a 4xx status and an `error` object whose `type` says what went "
         "wrong and whose `param` names the offending parameter where there is one.")

DETAILS = ("Idempotent requests may be retried safely: send an `Idempotency-Key` header with a value of "
           "your own, and the same key within a day returns the result of the first request, including "
           "errors. Objects may be expanded in place with `expand[]`: a field that holds an id holds the "
           "object instead, up to four levels deep. Webhook events are sent for every change this "
           "endpoint makes, in the order they happened, at least once; your endpoint should answer 2xx "
           "quickly and process events asynchronously. Test mode and live mode are separate: objects "
           "created with a test key never appear in live mode and are not billed. Rate limits apply per "
           "account: up to one hundred read requests and one hundred write requests a second in live "
           "mode, twenty-five of each in test mode; past them, requests get 429 with a `Retry-After` "
           "header. Amounts are integers in the currency's smallest unit (cents for USD, yen for JPY), "
           "and currencies are three-letter ISO codes in lower case.")


def description(indent, text):
    pad = " " * indent
    w(f"{pad}description: |\n")
    for line in text.split(". "):
        w(f"{pad}  {line.strip()}.\n")


w("""openapi: 3.0.3
info:
  title: Large vendor API
  version: "2026-11-01"
  description: |
    A document of the size and shape vendors publish, for Doppel's corpus.
  x-api-id: large-vendor
servers:
  - url: https://api.example.com/v1
security:
  - bearer: []
  - basic: []
tags:
""")
for r in range(RESOURCES):
    w(f"  - name: resource{r}\n    description: Resource number {r}.\n")
w("paths:\n")
for r in range(RESOURCES):
    name = f"resource{r}"
    schema = f"Resource{r}"
    base = f"/{name}s"
    # list
    w(f"  {base}:\n    get:\n      operationId: List{schema}s\n      tags: [{name}]\n      summary: List {name}s\n")
    description(6, PROSE + " " + DETAILS)
    w("""      x-stability: stable
      x-expandable-fields: [owner, parent]
      parameters:
        - $ref: "#/components/parameters/Limit"
        - $ref: "#/components/parameters/StartingAfter"
        - $ref: "#/components/parameters/Expand"
        - name: created
          in: query
          style: deepObject
          explode: true
          schema:
            type: object
            properties:
              gt: { type: integer }
              lt: { type: integer }
      responses:
        "200":
          description: A page.
          content:
            application/json:
              schema:
                type: object
                required: [object, data, has_more, url]
                properties:
                  object: { type: string, enum: [list] }
                  data:
                    type: array
                    items:
""")
    w(f"                      $ref: \"#/components/schemas/{schema}\"\n")
    w("""                  has_more: { type: boolean }
                  url: { type: string, format: uri }
""")
    # A vendor mistake on every tenth resource: a relative path in a uri field.
    if r % 10 == 0:
        w(f"              example: {{ object: list, data: [], has_more: false, url: \"{base}\" }}\n")
    w("""        "4XX":
          $ref: "#/components/responses/Error"
        default:
          $ref: "#/components/responses/Error"
""")
    # create
    w(f"    post:\n      operationId: Create{schema}\n      tags: [{name}]\n      summary: Create a {name}\n")
    description(6, PROSE + " " + DETAILS)
    w(f"""      requestBody:
        required: true
        content:
          application/json:
            schema: {{ $ref: "#/components/schemas/{schema}Input" }}
          application/x-www-form-urlencoded:
            schema: {{ $ref: "#/components/schemas/{schema}Input" }}
      responses:
        "200":
          description: The {name} created.
          content:
            application/json:
              schema: {{ $ref: "#/components/schemas/{schema}" }}
        "400":
          $ref: "#/components/responses/Error"
        default:
          $ref: "#/components/responses/Error"
""")
    # search
    w(f"  {base}/search:\n    get:\n      operationId: Search{schema}s\n      tags: [{name}]\n")
    description(6, PROSE + " " + DETAILS)
    w(f"""      parameters:
        - {{ name: query, in: query, required: true, schema: {{ type: string, maxLength: 500 }} }}
        - $ref: "#/components/parameters/Limit"
        - {{ name: page, in: query, schema: {{ type: string }} }}
      responses:
        "200":
          description: Matching {name}s.
          content:
            application/json:
              schema:
                type: object
                properties:
                  object: {{ type: string, enum: [search_result] }}
                  data: {{ type: array, items: {{ $ref: "#/components/schemas/{schema}" }} }}
                  next_page: {{ type: string, nullable: true }}
        default:
          $ref: "#/components/responses/Error"
""")
    # one
    w(f"  {base}/{{id}}:\n    parameters:\n      - $ref: \"#/components/parameters/Id\"\n")
    for method, verb in (("get", "Retrieve"), ("post", "Update"), ("delete", "Delete")):
        w(f"    {method}:\n      operationId: {verb}{schema}\n      tags: [{name}]\n")
        description(6, PROSE + " " + DETAILS)
        if method == "post":
            w(f"""      requestBody:
        content:
          application/x-www-form-urlencoded:
            schema: {{ $ref: "#/components/schemas/{schema}Input" }}
""")
        if method == "delete":
            w(f"""      responses:
        "200":
          description: Deleted.
          content:
            application/json:
              schema: {{ $ref: "#/components/schemas/Deleted" }}
        "404":
          $ref: "#/components/responses/NotFound"
""")
        else:
            w(f"""      responses:
        "200":
          description: The {name}.
          content:
            application/json:
              schema: {{ $ref: "#/components/schemas/{schema}" }}
""")
            if r % 10 == 3 and method == "get":
                # A vendor mistake: null where an enum string is declared, a date-time without seconds.
                w(f"              example: {{ id: \"{name}_1\", object: {name}, status: null, updated: \"2024-01-01T10:00Z\", metadata: {{}} }}\n")
            w("""        "404":
          $ref: "#/components/responses/NotFound"
        default:
          $ref: "#/components/responses/Error"
""")
    # actions and sub-resources
    for action in ("cancel", "confirm"):
        w(f"  {base}/{{id}}/{action}:\n    post:\n      operationId: {action.title()}{schema}\n      tags: [{name}]\n")
        w("      parameters:\n        - $ref: \"#/components/parameters/Id\"\n        - $ref: \"#/components/parameters/IdempotencyKey\"\n")
        description(6, PROSE + " " + DETAILS)
        w(f"""      responses:
        "200":
          description: The {name}, {action}ed.
          content:
            application/json:
              schema: {{ $ref: "#/components/schemas/{schema}" }}
        "409":
          description: The {name} cannot be {action}ed in its state.
          content:
            application/json:
              schema: {{ $ref: "#/components/schemas/Error" }}
        default:
          $ref: "#/components/responses/Error"
""")
    w(f"  {base}/{{id}}/events:\n    get:\n      operationId: List{schema}Events\n      tags: [{name}]\n")
    w("      parameters:\n        - $ref: \"#/components/parameters/Id\"\n        - $ref: \"#/components/parameters/Limit\"\n")
    description(6, PROSE + " " + DETAILS)
    w("""      responses:
        "200":
          description: Events.
          content:
            application/json:
              schema:
                type: object
                properties:
                  data: { type: array, items: { $ref: "#/components/schemas/Event" } }
                  has_more: { type: boolean }
        default:
          $ref: "#/components/responses/Error"
""")
    w(f"  {base}/{{id}}/events/{{event}}:\n    get:\n      operationId: Retrieve{schema}Event\n      tags: [{name}]\n")
    w("      parameters:\n        - $ref: \"#/components/parameters/Id\"\n        - { name: event, in: path, required: true, schema: { type: string, pattern: '^evt_[A-Za-z0-9]{8,}$' } }\n")
    description(6, PROSE + " " + DETAILS)
    w("""      responses:
        "200":
          description: The event.
          content:
            application/json:
              schema: { $ref: "#/components/schemas/Event" }
        "404":
          $ref: "#/components/responses/NotFound"
""")

w("""components:
  securitySchemes:
    bearer: { type: http, scheme: bearer }
    basic: { type: http, scheme: basic }
  parameters:
    Id: { name: id, in: path, required: true, schema: { type: string, maxLength: 5000 } }
    Limit: { name: limit, in: query, schema: { type: integer, minimum: 1, maximum: 100, default: 10 } }
    StartingAfter: { name: starting_after, in: query, schema: { type: string, maxLength: 5000 } }
    Expand:
      name: expand
      in: query
      style: form
      explode: true
      schema: { type: array, items: { type: string, maxLength: 5000 } }
    IdempotencyKey: { name: Idempotency-Key, in: header, schema: { type: string, maxLength: 255 } }
  responses:
    Error:
      description: An error.
      content:
        application/json:
          schema: { $ref: "#/components/schemas/Error" }
    NotFound:
      description: No such object.
      content:
        application/json:
          schema: { $ref: "#/components/schemas/Error" }
          example: { error: { type: invalid_request_error, message: No such object, param: id } }
  schemas:
    Error:
      type: object
      required: [error]
      properties:
        error:
          type: object
          required: [type]
          properties:
            type: { type: string, enum: [api_error, card_error, idempotency_error, invalid_request_error] }
            message: { type: string, maxLength: 5000 }
            param: { type: string, maxLength: 5000 }
            doc_url: { type: string, format: uri }
    Deleted:
      type: object
      required: [id, object, deleted]
      properties:
        id: { type: string }
        object: { type: string }
        deleted: { type: boolean, enum: [true] }
    Metadata:
      type: object
      additionalProperties: { type: string, maxLength: 500 }
      description: Up to 50 keys of your own.
    Address:
      type: object
      properties:
        line1: { type: string, nullable: true }
        line2: { type: string, nullable: true }
        city: { type: string, nullable: true }
        country: { type: string, nullable: true, pattern: '^[A-Z]{2}$' }
    Node:
      description: A tree node; its children are nodes.
      type: object
      required: [id]
      properties:
        id: { type: string }
        children: { type: array, items: { $ref: "#/components/schemas/Node" } }
    Event:
      type: object
      required: [id, object, type, data]
      properties:
        id: { type: string, pattern: '^evt_[A-Za-z0-9]{8,}$' }
        object: { type: string, enum: [event] }
        type: { type: string }
        created: { type: integer, format: unix-time }
        data:
          oneOf:
            - $ref: "#/components/schemas/CreatedEvent"
            - $ref: "#/components/schemas/DeletedEvent"
          discriminator:
            propertyName: kind
            mapping:
              created: "#/components/schemas/CreatedEvent"
              deleted: "#/components/schemas/DeletedEvent"
    CreatedEvent:
      type: object
      required: [kind, object_id]
      properties:
        kind: { type: string, enum: [created] }
        object_id: { type: string }
    DeletedEvent:
      type: object
      required: [kind, object_id]
      properties:
        kind: { type: string, enum: [deleted] }
        object_id: { type: string }
        reason: { type: string, nullable: true }
    Base:
      type: object
      properties:
        id: { type: string, maxLength: 5000 }
        created: { type: integer, format: unix-time }
        livemode: { type: boolean }
        metadata: { $ref: "#/components/schemas/Metadata" }
""")
for r in range(RESOURCES):
    name = f"resource{r}"
    schema = f"Resource{r}"
    w(f"    {schema}:\n")
    description(6, PROSE + " " + DETAILS)
    w(f"""      x-resourceId: {name}
      allOf:
        - $ref: "#/components/schemas/Base"
        - type: object
          required: [id, object, created]
          properties:
            object: {{ type: string, enum: [{name}] }}
            status: {{ type: string, enum: [draft, open, paid, void] }}
            amount: {{ type: integer, minimum: 0 }}
            updated: {{ type: string, format: date-time }}
            currency: {{ type: string, pattern: '^[a-z]{{3}}$' }}
            description: {{ type: string, nullable: true, maxLength: 5000 }}
            address: {{ $ref: "#/components/schemas/Address" }}
            tree: {{ $ref: "#/components/schemas/Node" }}
            owner:
              description: The owner's id, or the owner when expanded.
              anyOf:
                - {{ type: string }}
                - {{ $ref: "#/components/schemas/Base" }}
            url: {{ type: string, format: uri }}
""")
    w(f"    {schema}Input:\n")
    w(f"""      type: object
      required: [amount]
      properties:
        amount: {{ type: integer, minimum: 0, description: An amount in the smallest unit of its currency. }}
        currency: {{ type: string, pattern: '^[a-z]{{3}}$' }}
        description: {{ type: string, maxLength: 5000 }}
        metadata: {{ $ref: "#/components/schemas/Metadata" }}
        address: {{ $ref: "#/components/schemas/Address" }}
""")
