"""The store's revisions, one module each. ``0001``-``0007`` are the hand-written steps infx had before Alembic
(``schema_version`` 1-7), ported as they were; a database at ``schema_version`` N is stamped at revision N and
upgraded in place. Never edit a released revision: add the next one (and raise ``schema.SCHEMA_VERSION``)."""
