"""This node and its topics: the broker every API handler reads (``broker``), the metadata image
of topics and its log in ``__cluster_metadata-0`` (``image``, ``log``), topic creation and
deletion with Kafka's checks (``topic_admin``, ``topic_names``), and the cluster id kept in
``meta.properties`` (``meta_properties``)."""
