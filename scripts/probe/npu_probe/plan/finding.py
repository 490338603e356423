"""One preflight finding of the plan: {id, status, kind, message, fix}."""


def finding(fid, status, kind, message, fix=""):
    return {"id": fid, "status": status, "kind": kind, "message": " ".join(message.split()),
            "fix": " ".join(fix.split())}
