# A stdio MCP server (legacy era) for the admin tests: its tools are the
# arguments; a call of "ask" asks the client for its roots first, a call of
# "fail" is a tool error.
import json, sys

tools = sys.argv[1:] or ["echo"]
asked = {}
n = 0

def send(m):
    sys.stdout.write(json.dumps(m) + "\n")
    sys.stdout.flush()

for line in sys.stdin:
    m = json.loads(line)
    if "method" not in m:  # an answer to our roots/list
        call = asked.pop(m.get("id"), None)
        if call is not None:
            send({"jsonrpc": "2.0", "id": call, "result": {"content": [{"type": "text", "text": "roots " + json.dumps(m.get("result"))}]}})
        continue
    if "id" not in m:
        continue
    method = m["method"]
    if method == "initialize":
        r = {"protocolVersion": m["params"]["protocolVersion"], "capabilities": {"tools": {}}, "serverInfo": {"name": "test", "version": "1"}}
    elif method == "tools/list":
        r = {"tools": [{"name": t, "inputSchema": {"type": "object"}} for t in tools]}
    elif method == "tools/call":
        name = m["params"]["name"]
        if name == "ask":
            n += 1
            asked["r%d" % n] = m["id"]
            send({"jsonrpc": "2.0", "id": "r%d" % n, "method": "roots/list"})
            continue
        r = {"content": [{"type": "text", "text": name}], "isError": name == "fail"}
    else:
        r = {}
    send({"jsonrpc": "2.0", "id": m["id"], "result": r})
