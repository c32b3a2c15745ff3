"""cheapqa-client: the Python client and command line of the cheapqa service.

    from cheapqa_client import Client

    with Client("http://127.0.0.1:8000", api_key=None) as qa:
        qa.index(open("story.txt").read(), id="story")  # waits until indexed
        print(qa.ask("story", "Who drove Anna home?").results[0].answers)

Needs only httpx and pydantic. The response types (`cheapqa_client.schemas`) are the
service's own response models.
"""

from cheapqa_client.client import (
    Answers,
    AsyncClient,
    CheapqaError,
    Client,
    NewDocument,
    Retry,
    __version__,
)
from cheapqa_client.schemas import (
    Answer,
    DocumentAccepted,
    DocumentEntities,
    DocumentInfo,
    DocumentSummary,
    EntityMentions,
    ModelInfo,
    QueryAnswers,
    TrainedOn,
)

__all__ = [
    "Answer",
    "Answers",
    "AsyncClient",
    "CheapqaError",
    "Client",
    "DocumentAccepted",
    "DocumentEntities",
    "DocumentInfo",
    "DocumentSummary",
    "EntityMentions",
    "ModelInfo",
    "NewDocument",
    "QueryAnswers",
    "Retry",
    "TrainedOn",
    "__version__",
]
