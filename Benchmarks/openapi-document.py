#!/usr/bin/env python3
"""Writes an OpenAPI 3.1 document of N operations (default 1,000) for the
OpenAPI benchmark: each a GET or PUT with a path parameter, a query
parameter, a request schema, two examples and a documented 404 or 422."""
import sys

count = int(sys.argv[1]) if len(sys.argv) > 1 else 1000
out = sys.stdout
out.write('openapi: 3.1.0\ninfo: { title: Generated, version: "1" }\nservers: [{ url: /api/v1 }]\n')
out.write("security: [{ token: [] }]\npaths:\n")
for index in range(count // 2):
    out.write(f"""  /things{index}/{{id}}:
    get:
      operationId: getThing{index}
      parameters:
        - {{ name: id, in: path, required: true, schema: {{ type: integer, minimum: 1 }} }}
        - {{ name: verbose, in: query, schema: {{ type: boolean }} }}
      responses:
        "200":
          description: A thing.
          content:
            application/json:
              schema: {{ $ref: "#/components/schemas/Thing" }}
              examples:
                first: {{ value: {{ id: {index}, name: "thing {index}" }} }}
                second: {{ value: {{ id: {index}, name: "other {index}" }} }}
        "404":
          description: No thing.
          content: {{ application/json: {{ example: {{ error: "no thing {index}" }} }} }}
    put:
      operationId: putThing{index}
      requestBody:
        required: true
        content: {{ application/json: {{ schema: {{ $ref: "#/components/schemas/Thing" }} }} }}
      responses:
        "200":
          description: Stored.
          content: {{ application/json: {{ schema: {{ $ref: "#/components/schemas/Thing" }} }} }}
        "422":
          description: Invalid.
          content: {{ application/json: {{ example: {{ error: invalid }} }} }}
""")
out.write("""components:
  securitySchemes:
    token: { type: http, scheme: bearer }
  schemas:
    Thing:
      type: object
      required: [id, name]
      properties:
        id: { type: integer }
        name: { type: string, example: widget }
        tags: { type: [array, "null"], items: { type: string } }
""")
