"""Pod list pages projected straight from their bytes (``PodListProjector``); the rest of the
package is how (``item``: the decoded struct, ``rules``: the projection's rules on its parts,
``pagesplit``: cutting a page into items)."""

from agent.descheduler.cache.podlist.projector import PodListProjector

__all__ = ["PodListProjector"]
