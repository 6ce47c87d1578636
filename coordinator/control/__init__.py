"""The HTTP control endpoint (``control.listener``): fault injection, forced rebalances and the
rebalance timeline, for tests of applications in any language.

``faults.py`` holds the rules and their matching (the dispatcher asks it about every request
while a rule is active), ``responses.py`` builds the error answer of any API from its kio
schema, ``rebalance.py`` forces a new target assignment through a coordinator write,
``routes.py`` is the route table and ``http.py`` the server (a thread of its own; what touches
coordinator state runs on the event loop). ``pages.py`` adds the web pages: the index of groups
and each group's rebalance timeline page, which ``page.py`` writes (``static/`` holds its script
and style sheet).
"""
