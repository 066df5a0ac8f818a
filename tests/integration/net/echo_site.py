"""A site process for the restart tests: echoes every message back to its sender and
prints each link event as a JSON line.

    python echo_site.py SITE DIRECTORY_JSON SECRET OPTIONS_JSON
"""

import json
import sys

from atoll.platform.net import LinkOptions, Message, SiteEndpoint


def main() -> None:
    site, directory, secret, options = sys.argv[1:5]
    endpoint = SiteEndpoint(
        site, json.loads(directory), secret, options=LinkOptions(**json.loads(options))
    )
    with endpoint:
        print(json.dumps({"ready": endpoint.incarnation.hex()}), flush=True)
        while True:
            item = endpoint.receive(timeout=None)
            if isinstance(item, Message):
                endpoint.send(item.peer, item.payload)
            elif item is not None:
                print(json.dumps({"event": type(item).__name__, "peer": item.peer}), flush=True)


if __name__ == "__main__":
    main()
